"""JSON shapes of the API. List serializers read only what the list selectors load (no code)."""
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .achieved_rate_selectors import kernel_achieved_rates, verification_achieved_rates
from .models import Kernel, Profile, Task, Verification
from .ranking import excluded_reason
from .verdicts import decode_names, failure_kind


class TaskRefSerializer(serializers.Serializer):
    level = serializers.IntegerField()
    task_number = serializers.IntegerField()
    op_name = serializers.CharField()


class ClaimedSerializer(serializers.Serializer):
    """The archive's claims: runtimes in ms, speedup = torch runtime / kernel runtime."""
    runtime_ms = serializers.FloatField(source="claimed_runtime_ms", allow_null=True)
    eager_runtime_ms = serializers.FloatField(source="claimed_native_runtime_ms", allow_null=True)
    compile_runtime_ms = serializers.FloatField(source="claimed_compile_runtime_ms", allow_null=True)
    speedup_eager = serializers.FloatField(source="claimed_speedup_native", allow_null=True)
    speedup_compile = serializers.FloatField(source="claimed_speedup_compile", allow_null=True)
    correct = serializers.BooleanField(source="claimed_correct")
    max_diff = serializers.FloatField(source="claimed_max_diff", allow_null=True)


class KernelListSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    task = TaskRefSerializer()
    techniques = serializers.ListField(child=serializers.CharField(), read_only=True)
    claimed = ClaimedSerializer(source="*")
    verified = serializers.BooleanField(help_text="the latest finished verification passed with no blocking flag")
    remeasured_speedup_eager = serializers.FloatField(
        allow_null=True, help_text="speedup vs eager re-measured by that verification (null unless verified)")
    remeasured_speedup_compile = serializers.FloatField(
        allow_null=True, help_text="speedup vs torch.compile re-measured by that verification (null unless verified)")
    remeasured_runtime_ms = serializers.FloatField(allow_null=True, help_text="re-measured runtime (ms)")
    remeasured_gpu = serializers.CharField(help_text="GPU the re-measured numbers come from ('' unless verified)")
    hardware = serializers.CharField(help_text="GPU the archive's claims were measured on, as the archive says")
    verdict = serializers.CharField(help_text="latest trusted verification: passed, failed, error, or '' (none)")
    verdict_flags = serializers.SerializerMethodField(help_text="blocking flags of that verification")
    failure_kind = serializers.SerializerMethodField(
        help_text="why it failed, in one word: cheat, library (a library call does the heavy work) or wrong; '' if not failed")
    suspected = serializers.BooleanField(help_text="screening at import found reasons to suspect it (see screening_flags)")
    screening_flags = serializers.JSONField(help_text="suspected_* flags with evidence (kernels/screening.py)")
    ranked = serializers.SerializerMethodField(
        help_text="false when failed or suspected: rankings leave it out unless include=all")

    class Meta:
        model = Kernel
        fields = ["id", "url", "name", "kind", "task", "source_archive", "experiment", "hardware", "parent_id",
                  "techniques", "claimed", "verified", "verdict", "verdict_flags", "failure_kind", "suspected",
                  "screening_flags", "ranked", "remeasured_speedup_eager", "remeasured_speedup_compile",
                  "remeasured_runtime_ms", "remeasured_gpu"]

    def get_url(self, kernel) -> str:
        return reverse("kernel_detail", args=[kernel.id])

    def get_verdict_flags(self, kernel) -> list[str]:
        return decode_names(kernel.verdict_flags)

    def get_failure_kind(self, kernel) -> str:
        return failure_kind(kernel.verdict, decode_names(kernel.verdict_flags)) if kernel.verdict == "failed" else ""

    def get_ranked(self, kernel) -> bool:
        return not excluded_reason(kernel)


class TaskHoldsSerializer(serializers.Serializer):
    """What a leaderboard row's task version holds among the kernels matching the filters
    (kernels/task_holdings.py); each kernel counts in one state."""
    kernels = serializers.IntegerField()
    verified = serializers.IntegerField(help_text="a trusted verification passed them (re-measured)")
    failed = serializers.IntegerField(help_text="their latest trusted verification failed")
    suspected = serializers.IntegerField(help_text="screening suspects them and no verification passed them")
    run_errors = serializers.IntegerField(help_text="their latest trusted verification could not finish")
    not_remeasured = serializers.IntegerField(help_text="claims only: no trusted verification yet")
    summary = serializers.CharField(help_text='in words, e.g. "3 kernels, all suspected; none verified yet"')
    task_version = serializers.IntegerField(allow_null=True)
    task_url = serializers.CharField(help_text="the task page: its ranking, its claims, its failed and suspected kernels")
    has_ranked_kernel = serializers.BooleanField(help_text="false: the row's kernel fields are null")


class LeaderboardRowSerializer(KernelListSerializer):
    """A leaderboard row: a kernel with what its task version holds, or, for a task version
    whose matching kernels are all failed or suspected (or that has none), the task alone with
    what it holds and every kernel field null (issue #35: every task has a row)."""
    task_holds = serializers.SerializerMethodField()

    class Meta(KernelListSerializer.Meta):
        fields = KernelListSerializer.Meta.fields + ["task_holds"]

    @extend_schema_field(TaskHoldsSerializer)
    def get_task_holds(self, row) -> dict:
        task, version = row.task, getattr(row, "version_number", None)
        return {**row.holds.as_dict(), "task_version": version, "has_ranked_kernel": isinstance(row, Kernel),
                "task_url": reverse("task_detail", args=[task.level, task.task_number])}

    def to_representation(self, row):
        if isinstance(row, Kernel):
            return super().to_representation(row)
        empty = {name: [] if name in ("techniques", "verdict_flags", "screening_flags") else None for name in self.fields}
        return {**empty, "task": TaskRefSerializer(row.task).data, "ranked": False, "verified": False,
                "task_holds": self.get_task_holds(row)}


class ProfileSerializer(serializers.ModelSerializer):
    class Meta:
        model = Profile
        fields = ["kind", "origin", "parsed", "raw_text", "created_at"]


class AchievedRatesSerializer(serializers.Serializer):
    """Why a kernel is fast (kernels/achieved_rates.py): the judge's floors read the other way
    round. A null figure has its reason in *_unavailable; none is ever estimated."""
    median_ms = serializers.FloatField(allow_null=True, help_text="the re-measured candidate median (ms) on the "
                                       "ranking clock: the time the floors were checked against")
    bytes = serializers.IntegerField(allow_null=True, help_text="bytes one call must move at least: its inputs "
                                     "read once and its output written once (checks.bandwidth_floor.bytes)")
    achieved_gb_per_s = serializers.FloatField(allow_null=True, help_text="bytes / median, in GB/s (1e9 bytes/s)")
    peak_gb_per_s = serializers.FloatField(allow_null=True, help_text="the GPU's datasheet memory bandwidth the "
                                           "judge's floor used, GB/s (null when it had no datasheet figure)")
    fraction_of_peak_bandwidth = serializers.FloatField(allow_null=True,
                                                        help_text="achieved / peak (1.0 = the datasheet peak)")
    bandwidth_source = serializers.CharField(help_text="where the judge's bandwidth came from, as it says")
    bandwidth_unavailable = serializers.CharField(help_text="why a bandwidth figure is null ('' when none is)")
    flops = serializers.IntegerField(allow_null=True, help_text="FLOPs of one call of the reference, by torch's "
                                     "FlopCounterMode in the judge (checks.compute_floor.flops; since harness 2.6.0)")
    achieved_tflop_per_s = serializers.FloatField(allow_null=True, help_text="FLOPs / median, in TFLOP/s")
    peak_tflop_per_s = serializers.FloatField(allow_null=True, help_text="the GPU's dense 16-bit tensor-core "
                                              "datasheet peak the judge's floor used, TFLOP/s")
    fraction_of_peak_flops = serializers.FloatField(allow_null=True, help_text="achieved / peak")
    flops_source = serializers.CharField(help_text="where the judge's peak came from, as it says")
    flops_unavailable = serializers.CharField(help_text="why a compute figure is null ('' when none is)")


class KernelDetailSerializer(KernelListSerializer):
    profiles = ProfileSerializer(many=True, read_only=True)
    source_url = serializers.SerializerMethodField()
    achieved_rates = serializers.SerializerMethodField(
        help_text="rates of the run the verified state comes from (latest_verification); null without one")

    class Meta(KernelListSerializer.Meta):
        fields = KernelListSerializer.Meta.fields + ["code", "code_sha256", "error_text", "archive_index",
                                                     "source_url", "profiles", "achieved_rates"]

    def get_source_url(self, kernel) -> str:
        return reverse("kernel_source", args=[kernel.id])

    @extend_schema_field(AchievedRatesSerializer(allow_null=True))
    def get_achieved_rates(self, kernel) -> dict | None:
        rates = kernel_achieved_rates(kernel)  # from the row's annotations (selectors.kernel_detail_row)
        return None if rates is None else rates.as_api()


class TaskSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    kernel_count = serializers.IntegerField()
    correct_count = serializers.IntegerField()
    best_speedup_eager = serializers.FloatField(source="best_speedup_native", allow_null=True,
                                                help_text="best CLAIMED speedup vs eager among correct kernels "
                                                          "that are neither failed nor suspected")
    best_remeasured_speedup_eager = serializers.FloatField(
        allow_null=True, help_text="best speedup vs eager re-measured by a trusted verification that passed "
                                   "(null: none yet); the ranked figure")
    best_remeasured_gpu = serializers.CharField(allow_null=True, help_text="the GPU that re-measured it")

    class Meta:
        model = Task
        fields = ["level", "task_number", "op_name", "url", "kernel_count", "correct_count", "best_speedup_eager",
                  "best_remeasured_speedup_eager", "best_remeasured_gpu", "flags"]

    def get_url(self, task) -> str:
        return reverse("task_detail", args=[task.level, task.task_number])


class TaskDetailSerializer(serializers.ModelSerializer):
    kernels = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = ["level", "task_number", "op_name", "reference_code", "functional_code", "flags", "kernels"]

    @extend_schema_field(KernelListSerializer(many=True))
    def get_kernels(self, task):
        return KernelListSerializer(self.context["kernels"], many=True).data


class VerificationSerializer(serializers.ModelSerializer):
    """The one JSON shape of a verification: /api/kernels/<id>/verifications/, /api/verifications/<id>/
    and the answer of POST /api/kernels/<id>/reverify/ (docs/pages.md, "Verification JSON")."""
    has_blocking_flag = serializers.BooleanField(read_only=True)
    kernel = serializers.IntegerField(source="kernel_id", read_only=True,
                                      help_text="deprecated alias of kernel_id, kept for the clients of the "
                                                "re-verify answer and verification detail, which named it so")
    achieved_rates = serializers.SerializerMethodField(
        help_text="achieved GB/s and TFLOP/s of this run and their share of the GPU's peak, from its floors")

    class Meta:
        model = Verification
        fields = ["id", "kernel_id", "kernel", "status", "attempts", "origin", "verifier_name", "verifier_key_id",
                  "gpu_name", "device", "versions", "harness_version", "seeds", "trials", "tolerance",
                  "max_abs_error", "max_rel_error", "timings", "runtime_ms", "eager_runtime_ms",
                  "compile_runtime_ms", "speedup_eager", "speedup_compile", "flags", "has_blocking_flag",
                  "bundle_sha256", "log", "phases", "created_at", "started_at", "finished_at", "claimed_at",
                  "achieved_rates"]

    @extend_schema_field(AchievedRatesSerializer)
    def get_achieved_rates(self, verification) -> dict:
        return verification_achieved_rates(verification).as_api()
