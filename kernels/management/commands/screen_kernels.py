from django.core.management.base import BaseCommand

from kernels.screening_services import kernel_screening_refresh


class Command(BaseCommand):
    help = ("Screen kernels without a GPU (docs/screening.md): the harness's static scan of the source and "
            "the archive's profiles give suspected_* flags with evidence. Imports screen new kernels already; "
            "run this after a change to the scan or on an archive imported before screening existed.")

    def add_arguments(self, parser):
        parser.add_argument("--kernel", type=int, action="append", dest="kernels")

    def handle(self, *args, kernels, **options):
        suspected = kernel_screening_refresh(kernel_ids=kernels)
        self.stdout.write(f"{suspected} kernel(s) suspected")
