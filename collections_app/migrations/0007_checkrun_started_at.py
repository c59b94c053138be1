from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("collections_app", "0006_search_checks"),
    ]

    operations = [
        migrations.AddField(
            model_name="checkrun",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
