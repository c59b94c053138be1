"""An administrator whose saved language is Finnish uses the admin in Finnish: the index names every
app and model in Finnish, and registering a learning platform shows the addresses of CurreChat
to paste into Moodle; the launch address, opened by hand, explains itself. At 390 and 1366 px, with
axe-core."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow

pytestmark = pytest.mark.browser

PASSWORD = "yllapito-journey-pass-123"
WIDTHS = (390, 1366)
SETUP = """
from accounts.models import User
User.objects.create_superuser("yllapitaja", "yllapitaja@example.edu", {password!r}, language="fi")
"""


def look(page, journey, label: str) -> None:
    """The page fits the screen and passes axe-core at both widths (screenshots of each)."""
    expect(page.locator("html")).to_have_attribute("lang", "fi")
    height = page.viewport_size["height"]
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        no_overflow(page)
        journey.check_a11y(page)
        journey.shot(page, f"{label}-{width}")


def test_finnish_administrator_registers_a_learning_platform_with_the_tools_addresses(live_app, new_page, journey):
    live_app.manage("shell", "-c", SETUP.format(password=PASSWORD))
    page = new_page(390, 844)  # the browser asks for English: the saved language wins after login

    page.goto(live_app.url + "/login/")
    no_overflow(page)
    page.get_by_label("Username").fill("yllapitaja")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/login/" not in url)
    no_overflow(page)

    # The index: Django's own words and ours, all Finnish.
    page.goto(live_app.url + "/admin/")
    expect(page.get_by_role("heading", name="Sivuston ylläpito")).to_be_visible()
    main = page.locator("#content-main")
    for app in ("Kehotteet ja keskustelut", "Lähdemateriaali", "LTI 1.3 (oppimisalustat)"):
        expect(main.get_by_role("link", name=app, exact=True)).to_be_visible()
    for model in ("Kehotteet", "Liittymiset", "Kokoelmat", "Tiedostot", "Oppimisalustat"):
        expect(main.get_by_role("link", name=model, exact=True)).to_be_visible()
    expect(main).not_to_contain_text("Prompts and chats")
    look(page, journey, "admin-index")

    # A new learning platform: CurreChat's addresses come first, to paste into Moodle.
    main.get_by_role("link", name="Oppimisalustat", exact=True).click()
    expect(page.get_by_role("heading", name="Valitse muokattava oppimisalusta")).to_be_visible()
    no_overflow(page)
    page.get_by_role("link", name="Lisää oppimisalusta").click()
    expect(page.get_by_role("heading", name="Lisää oppimisalusta")).to_be_visible()
    addresses = page.get_by_test_id("tool-addresses")
    expect(addresses.get_by_role("heading", name="CurreChatin osoitteet oppimisalustalle")).to_be_visible()
    launch = live_app.url + "/lti/launch/"
    expect(addresses.get_by_test_id("tool-address")).to_have_text(
        [live_app.url + "/lti/login/", launch, live_app.url + "/lti/jwks/", launch, live_app.url + "/lti/register/"]
    )
    for label in (
        "Kirjautumisen aloitusosoite",
        "Käynnistysosoite",
        "Julkisen avainjoukon (JWKS) osoite",
        "Syvälinkityksen osoite",
        "Dynaamisen rekisteröinnin osoite",
    ):
        expect(addresses).to_contain_text(label)
    expect(addresses).to_contain_text("Initiate login URL")  # Moodle's own field names, to find them there
    look(page, journey, "platform-add")

    # What Moodle shows in return goes into the form; the platform is registered.
    page.get_by_label("Nimi").fill("Yliopiston Moodle")
    page.get_by_label("Myöntäjä").fill("https://moodle.example.edu")
    page.get_by_label("Asiakastunnus (client ID)").fill("curre-1")
    page.get_by_label("Käyttöönottojen tunnisteet").fill('["1"]')
    page.get_by_label("Tunnistautumispyynnön URL").fill("https://moodle.example.edu/mod/lti/auth.php")
    page.get_by_label("Käyttötunnisteen (access token) URL").fill("https://moodle.example.edu/mod/lti/token.php")
    page.get_by_label("Julkisen avainjoukon URL").fill("https://moodle.example.edu/mod/lti/certs.php")
    page.locator("input[name=_save]").click()  # Django's "Tallenna"
    expect(page.locator(".messagelist")).to_contain_text("Yliopiston Moodle")
    expect(page.get_by_role("link", name="Yliopiston Moodle (https://moodle.example.edu)")).to_be_visible()
    look(page, journey, "platform-list")

    # The registered platform's page keeps the addresses at hand.
    page.get_by_role("link", name="Yliopiston Moodle (https://moodle.example.edu)").click()
    expect(page.get_by_test_id("tool-address").first).to_have_text(live_app.url + "/lti/login/")
    look(page, journey, "platform-change")

    # Someone opens the launch address by hand: a page says what it is for, in Finnish.
    response = page.goto(launch)
    assert response is not None and response.status == 405
    expect(page.get_by_role("heading", name="Oppimisalustasi avaa tämän osoitteen")).to_be_visible()
    expect(page.get_by_test_id("lti-launch-get")).to_contain_text("palaa kurssillesi")
    look(page, journey, "launch-by-hand")
