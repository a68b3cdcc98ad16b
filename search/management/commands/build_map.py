from django.core.management.base import BaseCommand
from tqdm import tqdm

from search import services
from search.models import KernelEmbedding


class Command(BaseCommand):
    help = (
        "Run UMAP over every stored embedding and store each kernel's 2-D map coordinates "
        "(replacing the previous map). Run build_index first so every kernel has an embedding."
    )

    def add_arguments(self, parser):
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, no_progress: bool, **options):
        bar = tqdm(total=KernelEmbedding.objects.count(), unit="vector", desc="loading embeddings",
                   disable=no_progress, file=self.stderr._out)
        # UMAP's own progress goes to the log (its epochs bar) when progress is shown.
        count = services.map_build(load_progress=bar.update, verbose=not no_progress)
        bar.close()
        self.stdout.write(f"map: {count} kernels placed")
