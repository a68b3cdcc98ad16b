from django.core.management.base import BaseCommand

from kernels.services import kernel_techniques_refresh


class Command(BaseCommand):
    help = ("Recompute technique tags from each kernel's code (inline PTX included) and the SASS of its "
            "GPU-binary listing. Imports and stored listings tag already; run this after a change to "
            "kernels/techniques.py or on an archive imported before it, then build_index.")

    def add_arguments(self, parser):
        parser.add_argument("--kernel", type=int, action="append", dest="kernels")

    def handle(self, *args, kernels, **options):
        changed = kernel_techniques_refresh(kernel_ids=kernels)
        self.stdout.write(f"{changed} kernel(s) retagged")
