from django.core.management.base import BaseCommand
from tqdm import tqdm

from kernels.models import Kernel
from search import services, storage
from search.models import KernelEmbedding


class Command(BaseCommand):
    help = (
        "Embed every kernel whose text changed (stored in the database), then rebuild the FAISS "
        "index file from all stored embeddings and swap it in atomically. Safe to re-run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--no-embed", action="store_true",
                            help="only rebuild the index from the embeddings already stored (another host embedded them)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, no_embed: bool, no_progress: bool, **options):
        out = self.stderr._out
        if not no_embed:
            with tqdm(total=Kernel.objects.count(), unit="kernel", desc="embedding", disable=no_progress,
                      file=out) as bar:
                summary = services.kernel_embeddings_update(progress=bar.update)
            self.stdout.write(f"kernels: {summary.kernels}, embedded now: {summary.embedded}, "
                              f"unchanged: {summary.unchanged}")
        with tqdm(total=KernelEmbedding.objects.count(), unit="vector", desc="indexing", disable=no_progress,
                  file=out) as bar:
            size = services.search_index_rebuild(embed=False, load_progress=bar.update)
        self.stdout.write(f"index: {size} kernels in {storage.index_path()}")
