from django.contrib import admin

from .models import EmailVerification


@admin.register(EmailVerification)
class EmailVerificationAdmin(admin.ModelAdmin):
    list_display = ("user", "email", "created_at", "verified_at")
    search_fields = ("user__username", "email")
    readonly_fields = ("created_at",)
