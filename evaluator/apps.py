from django.apps import AppConfig


class EvaluatorConfig(AppConfig):
    # The Django side of the evaluator: verification services, Huey tasks, commands.
    # The verifier itself (the verifier/ package) never imports Django.
    name = "evaluator"
    verbose_name = "Re-verification"

    def ready(self):
        from kernels.extension_points import KernelPanel, register_kernel_panel

        # The re-verify form and the state of a run in progress, under the kernel's title; it
        # reads the page's own open_verification (kernels/kernel_page.py), no query of its own.
        register_kernel_panel(KernelPanel(name="evaluator.reverify", slot="actions",
                                          template="evaluator/_reverify.html"))
        # What the GPU ran (SASS, PTX, registers, spills, ncu's hot spots), under the source.
        register_kernel_panel(KernelPanel(name="evaluator.gpu_binary", slot="after_source",
                                          template="evaluator/_gpu_binary.html", context=_gpu_binary_panel))


def _gpu_binary_panel(kernel, page) -> dict:
    from .gpu_binary_page import gpu_binary_panel

    return gpu_binary_panel(kernel, page)
