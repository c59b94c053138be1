"""A wrong address or a refused admin page is one of our pages (stylesheet, phone-width viewport,
the reader's language, a way home), not Django's bare text."""

from __future__ import annotations

from tests.test_password_reset_mail import staff_with


def test_an_address_with_no_page_answers_404_with_a_way_home(client, client_for, owner):
    for visitor in (client, client_for(owner)):
        response = visitor.get("/no-such-page/")
        page = response.content.decode()
        assert response.status_code == 404
        assert "There is no page at this address." in page
        assert 'name="viewport"' in page and "css/app.css" in page
        assert 'href="/"' in page and "Back to your home page" in page
    assert "New collection" in page  # a signed-in teacher keeps the menu


def test_the_404_page_speaks_the_readers_language(client):
    page = client.get("/no-such-page/", headers={"accept-language": "fi"}).content.decode()
    assert 'lang="fi"' in page and "Back to your home page" not in page
    assert "Takaisin" in page


def test_an_admin_page_staff_may_not_open_answers_403_in_words(client_for, student, db):
    staff = client_for(staff_with("change_user", "view_user"))
    response = staff.get(f"/admin/accounts/user/{student.pk}/password/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "Your account may not open this page." in page and 'name="viewport"' in page
