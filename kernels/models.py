"""The archive's data: tasks, kernels with their claimed numbers, profiles, verifications.

Models stay thin: writes live in services.py, reads in selectors.py.
"""
from django.db import models


class Task(models.Model):
    """A KernelBench problem: a reference PyTorch module, optionally its functional form."""

    level = models.PositiveSmallIntegerField()
    task_number = models.PositiveIntegerField()
    op_name = models.CharField(max_length=255)
    reference_code = models.TextField()
    # `module_fn` plus `Model.forward(..., fn=module_fn)`; needed to call cuda_forward kernels
    # of tasks with weights. Empty when unknown.
    functional_code = models.TextField(blank=True, default="")
    # Weak-check findings about the reference (near-constant or input-insensitive output).
    flags = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["level", "task_number"]
        constraints = [models.UniqueConstraint(fields=["level", "task_number"], name="task_unique_level_number")]

    def __str__(self):
        return f"L{self.level} T{self.task_number} {self.op_name}"


class TaskVersion(models.Model):
    """One version of a task's reference module. KernelBench has changed its problems over time
    (level 1 task 1: N = 2048 and randn, later N = 4096 and rand); speedups measured on different
    versions are not comparable, so kernels and claims belong to a version. Identified by the
    sha256 of the normalized reference (kernels/task_catalog.py): comments, docstrings and
    formatting aside. Versions the catalog knows are numbered first, oldest first; versions first
    seen in an import follow, never merged into another."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveSmallIntegerField()
    reference_sha256 = models.CharField(max_length=64)
    # The reference as first received; empty for a catalog version no import has brought yet.
    reference_code = models.TextField(blank=True, default="")
    label = models.CharField(max_length=255)  # where it comes from: "KernelBench bb27f27 (2024-10-24)"
    in_catalog = models.BooleanField(default=False)
    current = models.BooleanField(default=False)  # today's KernelBench problem set
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "reference_sha256"], name="task_version_unique_reference"),
            models.UniqueConstraint(fields=["task", "number"], name="task_version_unique_number"),
        ]

    def __str__(self):
        return f"{self.task} v{self.number}"


class Kernel(models.Model):
    """One generated kernel and the numbers its archive claims for it."""

    class Kind(models.TextChoices):
        CUDA_FORWARD = "cuda_forward", "CUDA forward (called in place of module_fn)"
        MODEL_NEW = "model_new", "ModelNew module (KernelBench)"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="kernels")
    # The task version of the first source that brought the kernel; each claim names its own.
    task_version = models.ForeignKey(TaskVersion, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="kernels")
    name = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    code = models.TextField()
    code_sha256 = models.CharField(max_length=64)
    # Provenance of the first source; every source's is a Claim (kernel.claims).
    source_archive = models.CharField(max_length=255)
    experiment = models.CharField(max_length=255, blank=True, default="")
    archive_index = models.BigIntegerField(null=True, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    # Claimed results, as imported. Runtimes in milliseconds; speedup = baseline / kernel runtime.
    claimed_runtime_ms = models.FloatField(null=True, blank=True)
    claimed_native_runtime_ms = models.FloatField(null=True, blank=True)
    claimed_compile_runtime_ms = models.FloatField(null=True, blank=True)
    claimed_speedup_native = models.FloatField(null=True, blank=True)
    claimed_speedup_compile = models.FloatField(null=True, blank=True)
    claimed_correct = models.BooleanField(default=False)
    claimed_max_diff = models.FloatField(null=True, blank=True)
    error_text = models.TextField(blank=True, default="")
    hardware = models.CharField(max_length=128, blank=True, default="")
    # Technique tags detected from the code (kernels/techniques.py), stored as ",a,b,".
    technique_tags = models.CharField(max_length=512, blank=True, default="")
    # The latest finished re-verification, copied here by kernel_verification_state_refresh so
    # lists filter and rank by re-measured numbers without subqueries. "Verified" means the
    # latest finished run passed with no blocking flag; re-measured numbers are set only then.
    latest_verification = models.ForeignKey(
        "Verification", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    verified = models.BooleanField(default=False)
    remeasured_runtime_ms = models.FloatField(null=True, blank=True)
    remeasured_speedup_eager = models.FloatField(null=True, blank=True)
    remeasured_speedup_compile = models.FloatField(null=True, blank=True)
    # The GPU the re-measured numbers come from: claims and re-measurements of different GPUs
    # are never shown in one column without it.
    remeasured_gpu = models.CharField(max_length=128, blank=True, default="")
    # The latest trusted finished verification in plain words (kernels/verdicts.py): "" (none),
    # passed, failed or error; and the names of its blocking flags, stored as ",a,b,", so lists
    # tell "wrong", "cheats" and "a library does the work" apart without reading verifications.
    verdict = models.CharField(max_length=8, blank=True, default="")
    verdict_flags = models.CharField(max_length=512, blank=True, default="")
    # Screening at import (kernels/screening.py): suspected_* flags with evidence, from the
    # static scan of the source and the imported profiles. Suspicion, not proof: a passed
    # verification outranks it.
    screening_flags = models.JSONField(default=list, blank=True)
    suspected = models.BooleanField(default=False)
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "-claimed_speedup_native", "id"]
        constraints = [models.UniqueConstraint(fields=["task", "code_sha256"], name="kernel_unique_task_code")]
        indexes = [
            models.Index(fields=["task", "claimed_correct", "claimed_speedup_native"]),
            models.Index(fields=["task", "claimed_correct", "claimed_speedup_compile"]),
            models.Index(fields=["task", "claimed_correct", "claimed_runtime_ms"]),
            models.Index(fields=["claimed_speedup_native"]),
            models.Index(fields=["claimed_speedup_compile"]),
            models.Index(fields=["claimed_runtime_ms"]),
            models.Index(fields=["hardware"]),
            models.Index(fields=["technique_tags", "claimed_speedup_native"]),
            models.Index(fields=["verified", "remeasured_speedup_eager"]),
            models.Index(fields=["task", "verified", "remeasured_speedup_eager"]),
            models.Index(fields=["verdict", "suspected"]),
            models.Index(fields=["source_archive"]),
            models.Index(fields=["experiment"]),
        ]

    def __str__(self):
        return f"{self.name} ({self.task})"

    @property
    def reference_code(self) -> str:
        """The reference this kernel was measured against: its task version's, else the task's
        (the first reference imported for the task). What a verification must run it against."""
        version = self.task_version
        return version.reference_code if version is not None and version.reference_code else self.task.reference_code

    @property
    def techniques(self) -> list[str]:
        from .techniques import decode_tags

        return decode_tags(self.technique_tags)


class Claim(models.Model):
    """What one source claims for a kernel on one GPU: its speedup against each baseline the
    source measured, on the task version the source ran. The same code published by two sources
    (or for two GPUs) is one Kernel with one Claim each."""

    class Baseline(models.TextChoices):
        EAGER = "eager", "PyTorch eager"
        COMPILE = "torch_compile", "torch.compile (default)"
        COMPILE_REDUCE_OVERHEAD = "torch_compile_reduce_overhead", "torch.compile (reduce-overhead)"
        CUDA_GRAPH = "cuda_graph", "CUDA graph"
        CUDNN = "cudnn", "cuDNN"

    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="claims")
    task_version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="claims")
    source_archive = models.CharField(max_length=255)
    hardware = models.CharField(max_length=128, blank=True, default="")
    name = models.CharField(max_length=255)  # the kernel's name in this source
    experiment = models.CharField(max_length=255, blank=True, default="")  # run or model name
    claimed_correct = models.BooleanField(default=False)
    runtime_ms = models.FloatField(null=True, blank=True)
    eager_runtime_ms = models.FloatField(null=True, blank=True)
    compile_runtime_ms = models.FloatField(null=True, blank=True)
    # Speedup = baseline runtime / kernel runtime, one column per Baseline.
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_torch_compile = models.FloatField(null=True, blank=True)
    speedup_torch_compile_reduce_overhead = models.FloatField(null=True, blank=True)
    speedup_cuda_graph = models.FloatField(null=True, blank=True)
    speedup_cudnn = models.FloatField(null=True, blank=True)
    # The baselines' own code where the source publishes it ({"cuda_graph": ..., "cudnn": ...}).
    baseline_code = models.JSONField(default=dict, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kernel", "source_archive", "hardware"]
        constraints = [
            models.UniqueConstraint(fields=["kernel", "source_archive", "hardware"], name="claim_unique_source_gpu"),
        ]
        indexes = [models.Index(fields=["task_version", "hardware", "source_archive"])]

    def __str__(self):
        return f"{self.source_archive} on {self.hardware or '?'}: kernel {self.kernel_id}"

    @staticmethod
    def speedup_field(baseline: str) -> str:
        return f"speedup_{baseline}"


class Profile(models.Model):
    """A profiler's output for a kernel: the raw text as received and its parsed structure."""

    class Kind(models.TextChoices):
        NCU = "ncu", "Nsight Compute"
        TORCH = "torch", "torch profiler"
        CLANG_TIDY = "clang_tidy", "clang-tidy"
        # What the GPU ran: the worker's listing of the kernel's build (verifier/gpu_binary.py):
        # raw_text is cuobjdump -res-usage as printed, parsed the listing (SASS, PTX, resources).
        GPU_BINARY = "gpu_binary", "GPU binary (SASS, PTX)"

    class Origin(models.TextChoices):
        ARCHIVE = "archive", "Imported with the archive"
        WORKER = "worker", "Measured by our worker"

    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="profiles")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.ARCHIVE)
    raw_text = models.TextField()
    parsed = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kernel", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["kernel", "kind", "origin"], name="profile_unique_kernel_kind_origin")
        ]

    def __str__(self):
        return f"{self.get_kind_display()} of kernel {self.kernel_id}"


class Verification(models.Model):
    """One run of our harness on a kernel: what it measured and every flag it raised.

    Defined here, beside Kernel (whose latest_verification points at it), but owned by the
    evaluator app: only evaluator's services write these rows (tests/test_architecture.py)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        ERROR = "error", "Error"

    class Origin(models.TextChoices):
        # Which results count: the site's own worker and records signed by a trusted key move a
        # kernel's verified state; contributions (a registered user's key) show beside them;
        # unsigned records (kept on request) are shown as such and count for nothing.
        WORKER = "worker", "This site's worker"
        IMPORTED = "imported", "Imported, signed by a trusted key"
        CONTRIBUTED = "contributed", "Contributed, signed by a user's key"
        UNSIGNED = "unsigned", "Imported without a valid trusted signature"

    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="verifications")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.WORKER)
    gpu_name = models.CharField(max_length=128, blank=True, default="")
    versions = models.JSONField(default=dict, blank=True)
    harness_version = models.CharField(max_length=32, blank=True, default="")
    seeds = models.JSONField(default=list, blank=True)
    trials = models.JSONField(default=list, blank=True)
    tolerance = models.JSONField(default=dict, blank=True)
    max_abs_error = models.FloatField(null=True, blank=True)
    max_rel_error = models.FloatField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    runtime_ms = models.FloatField(null=True, blank=True)
    eager_runtime_ms = models.FloatField(null=True, blank=True)
    compile_runtime_ms = models.FloatField(null=True, blank=True)
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_compile = models.FloatField(null=True, blank=True)
    flags = models.JSONField(default=list, blank=True)
    # Seconds the worker spent building, waiting for the GPU, running and profiling: what
    # throughput figures are made of (docs/worker.md).
    phases = models.JSONField(default=dict, blank=True)
    bundle_sha256 = models.CharField(max_length=64, blank=True, default="")
    log = models.TextField(blank=True, default="")
    # Crash recovery: a running job whose worker stops heartbeating is re-queued once.
    attempts = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    device = models.CharField(max_length=8, blank=True, default="")
    requested_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="verifications"
    )
    # The full result document as the harness wrote it (fields above are read from it through
    # evaluator/verification_results.fields_from_result); exports carry it whole.
    result = models.JSONField(default=dict, blank=True)
    # Signed records (evaluator/verification_records.py): who vouches for this result, and the
    # exact record and signature as received, so an export passes them on unchanged.
    verifier_name = models.CharField(max_length=255, blank=True, default="")
    verifier_key_id = models.CharField(max_length=64, blank=True, default="")
    signed_record = models.TextField(blank=True, default="")
    signature = models.CharField(max_length=128, blank=True, default="")
    record_sha256 = models.CharField(max_length=64, blank=True, default="")
    # A signed record's own verified_at, as its signer claims it. created_at is when this site
    # received the row; only a trusted signer's claim also dates the run (finished_at).
    claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["kernel", "status", "-finished_at"]),
            models.Index(fields=["status", "heartbeat_at"]),
        ]
        constraints = [
            # Importing the same signed record twice adds nothing.
            models.UniqueConstraint(fields=["record_sha256"], condition=~models.Q(record_sha256=""),
                                    name="verification_unique_record"),
        ]

    def __str__(self):
        return f"Verification {self.id} of kernel {self.kernel_id}: {self.status}"

    @property
    def has_blocking_flag(self) -> bool:
        return any(flag.get("blocking") for flag in self.flags or [])


# Finished runs, and the origins whose results move a kernel's verified state (the site's worker
# and records signed by a trusted key); contributions and unsigned records never do.
FINISHED_STATUSES = (Verification.Status.PASSED, Verification.Status.FAILED, Verification.Status.ERROR)
TRUSTED_ORIGINS = (Verification.Origin.WORKER, Verification.Origin.IMPORTED)


class VerifierKey(models.Model):
    """Owned by the evaluator app, like Verification. A contributor's Ed25519 public key, registered by a signed-in user. Records signed by it
    import as contributions: shown as "verified by <owner> on <GPU>", beside the site's own.
    The keys whose records count as the site's own are in settings.TRUSTED_KEYS_FILE instead."""

    key_id = models.CharField(max_length=64, unique=True)
    public_key = models.CharField(max_length=64)  # base64 of the raw 32-byte key
    owner_name = models.CharField(max_length=255)
    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="verifier_keys")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner_name", "key_id"]

    def __str__(self):
        return f"{self.owner_name} ({self.key_id})"
