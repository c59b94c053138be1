from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("collections_app", "0007_checkrun_started_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="sourcefile",
            name="started",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="sourcefile",
            name="re_extract",
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name="sourcefile",
            name="queued_language",
            field=models.CharField(blank=True, max_length=16),
        ),
    ]
