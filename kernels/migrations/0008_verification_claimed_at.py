from django.db import migrations, models


class Migration(migrations.Migration):
    """A signed record's claimed time apart from when the site received it (issue #37)."""

    dependencies = [
        ('kernels', '0007_profile_kind_gpu_binary'),
    ]

    operations = [
        migrations.AddField(
            model_name='verification',
            name='claimed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
