# A test question made from a material gap expects no file yet.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("collections_app", "0012_checkrun_ran_stopped"),
    ]

    operations = [
        migrations.AlterField(
            model_name="searchcheck",
            name="expect_file",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="collections_app.sourcefile",
                verbose_name="expected file",
            ),
        ),
    ]
