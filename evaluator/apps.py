from django.apps import AppConfig


class EvaluatorConfig(AppConfig):
    # The Django side of the evaluator: verification services, Huey tasks, commands.
    # The harness itself (harness*.py, sandbox.py, bundle_verify.py) never imports Django.
    name = "evaluator"
    verbose_name = "Re-verification"
