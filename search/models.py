"""Derived search data stored per kernel, so any host can rebuild the FAISS index and the map.

The index file under DATA_DIR is a cache of these rows; the rows are the truth.
"""
from django.db import models

from kernels.models import Kernel


class KernelEmbedding(models.Model):
    """A kernel's sentence embedding: float32 little-endian bytes, unit length."""

    kernel = models.OneToOneField(Kernel, on_delete=models.CASCADE, primary_key=True, related_name="embedding")
    vector = models.BinaryField()
    model_name = models.CharField(max_length=128)
    # sha256 of the text that was embedded: re-embedding is skipped when text and model are unchanged.
    text_sha256 = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"embedding of kernel {self.kernel_id} ({self.model_name})"


class MapPoint(models.Model):
    """A kernel's place on the 2-D UMAP map of all embeddings, from the last `build_map`."""

    kernel = models.OneToOneField(Kernel, on_delete=models.CASCADE, primary_key=True, related_name="map_point")
    x = models.FloatField()
    y = models.FloatField()
    built_at = models.DateTimeField()

    def __str__(self):
        return f"map point of kernel {self.kernel_id} ({self.x:.2f}, {self.y:.2f})"
