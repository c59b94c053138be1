# A co-teacher by invitation (issue 46 item 3): a role that teaches only what it was invited to.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_user_email_confirmed"),
    ]

    operations = [
        migrations.AlterField(
            model_name="user",
            name="role",
            field=models.CharField(
                choices=[("teacher", "Teacher"), ("student", "Student"), ("guest", "Co-teacher by invitation")],
                default="student",
                max_length=16,
                verbose_name="role",
            ),
        ),
    ]
