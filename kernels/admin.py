from django.contrib import admin

from .models import Kernel, Profile, Task, Verification


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("level", "task_number", "op_name")
    list_filter = ("level",)
    search_fields = ("op_name",)


class ProfileInline(admin.TabularInline):
    model = Profile
    fields = ("kind", "origin", "created_at")
    readonly_fields = fields
    extra = 0
    show_change_link = True


@admin.register(Kernel)
class KernelAdmin(admin.ModelAdmin):
    list_display = ("name", "task", "claimed_correct", "claimed_speedup_native", "claimed_runtime_ms", "source_archive")
    list_filter = ("claimed_correct", "task__level", "source_archive", "kind")
    search_fields = ("name", "code_sha256", "experiment")
    list_select_related = ("task",)
    raw_id_fields = ("task", "parent")
    inlines = [ProfileInline]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("kernel", "kind", "origin", "created_at")
    list_filter = ("kind", "origin")
    list_select_related = ("kernel",)
    raw_id_fields = ("kernel",)


@admin.register(Verification)
class VerificationAdmin(admin.ModelAdmin):
    list_display = ("kernel", "status", "gpu_name", "speedup_eager", "created_at")
    list_filter = ("status", "gpu_name")
    list_select_related = ("kernel",)
    raw_id_fields = ("kernel", "requested_by")
