from django.apps import AppConfig


class EvaluatorConfig(AppConfig):
    # The Django side of the evaluator: verification services, Huey tasks, commands.
    # The verifier itself (the verifier/ package) never imports Django.
    name = "evaluator"
    verbose_name = "Re-verification"
