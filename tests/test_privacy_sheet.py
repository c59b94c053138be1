"""The privacy sheet for the data protection officer and IT (issue 46, item 14): one page and a
Markdown download, written from the deployment's settings (retention, model servers without their
secrets, sub-processors, who runs it); staff only, as it names the servers, and a staff member
whose access was just taken away is refused at once."""

from __future__ import annotations

import pytest

from accounts.models import Role, User
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

SECRET = "sk-very-secret-42"


@pytest.fixture
def deployment(settings):
    settings.CHAT_RETENTION_DAYS = 30
    settings.OLLAMA_HOST = "http://gpu-1.uni.example:11434"
    settings.OPENAI_BASE_URL = f"https://proxy:{SECRET}@llm.uni.example/v1?key={SECRET}"
    settings.PRIVACY_OPERATOR = "Esimerkkiyliopisto IT"
    settings.PRIVACY_SUBPROCESSORS = ["Example Cloud Oy: hosting, Helsinki", "Model Co: the model server, EU"]
    return settings


@pytest.fixture
def staff(db):
    return User.objects.create_user("it-staff", password=PASSWORD, role=Role.TEACHER, is_staff=True)


def test_staff_read_the_sheet_written_from_the_settings(deployment, staff, client_for):
    page = client_for(staff).get("/privacy-sheet/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Chats: 30 days after their last message" in html
    assert "http://gpu-1.uni.example:11434" in html and "llm.uni.example/v1" in html
    assert SECRET not in html, "no server's secret is shown"
    assert "Example Cloud Oy: hosting, Helsinki" in html and "Model Co: the model server, EU" in html
    assert "Esimerkkiyliopisto IT" in html
    assert "Chats under a number" in html and "Teachers read chats labelled “Student N”" in html  # each level
    assert html.count("<h1") == 1


def test_the_download_is_the_same_sheet_in_markdown(deployment, staff, client_for):
    response = client_for(staff).get("/privacy-sheet.md")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    assert "attachment" in response["Content-Disposition"]
    text = response.content.decode()
    assert text.startswith("# Privacy sheet")
    assert "## Sub-processors" in text and "- Example Cloud Oy: hosting, Helsinki" in text
    assert "| http://gpu-1.uni.example:11434 |" in text and SECRET not in text


def test_unset_settings_say_which_setting_to_fill_in(settings, staff, client_for):
    settings.PRIVACY_SUBPROCESSORS = []
    settings.PRIVACY_OPERATOR = ""
    text = client_for(staff).get("/privacy-sheet.md").content.decode()
    assert "the administrator sets PRIVACY_SUBPROCESSORS" in text
    assert "the administrator sets PRIVACY_OPERATOR" in text


def test_teachers_and_students_are_refused_and_visitors_sent_to_log_in(deployment, owner, student, client_for):
    for user in (owner, student):
        for path in ("/privacy-sheet/", "/privacy-sheet.md"):
            response = client_for(user).get(path)
            assert response.status_code == 403 and SECRET not in response.content.decode()
    assert client_for(None).get("/privacy-sheet/")["Location"].startswith("/login/")


def test_staff_whose_access_was_just_taken_away_are_refused(deployment, staff, client_for):
    client = client_for(staff)
    assert client.get("/privacy-sheet/").status_code == 200
    User.objects.filter(pk=staff.pk).update(is_staff=False)
    assert client.get("/privacy-sheet/").status_code == 403


def test_the_admin_links_the_sheet(staff, client_for):
    admin = client_for(staff).get("/admin/").content.decode()
    assert 'href="/privacy-sheet/"' in admin
