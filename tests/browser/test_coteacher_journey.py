"""Co-teachers without the admin (issue 29, item 1) in a real browser, on a phone (390 px) and a laptop
(1366 px): the owner finds a colleague by typing the start of her username and picks her from the
suggestions with the keyboard; an address nobody has becomes an invitation link, which a newcomer
opens to make a teacher account and co-own the collection at once; a withdrawn link says so; and a
co-owner the owner unticks loses the collection on her next click. axe-core checks every step."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow

pytestmark = pytest.mark.browser

PASSWORD = "coteach-journey-pass-123"
SETUP = """
import json
from accounts.models import Role, User
from collections_app.models import Collection
suffix, password = json.loads({args!r})
owner = User.objects.create_user("aino" + suffix, password=password, role=Role.TEACHER, first_name="Aino")
User.objects.create_user(
    "kielo" + suffix, password=password, role=Role.TEACHER, first_name="Kielo", last_name="Korhonen",
    email=f"kielo{{suffix}}@uni.example",
)
User.objects.create_user("kielo" + suffix + "-opiskelija", password=password, role=Role.STUDENT)  # never suggested
collection = Collection.objects.create(name="Tilastotiede " + suffix, owner=owner, language="finnish")
print(collection.pk)
"""


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_owner_adds_a_colleague_by_typing_and_invites_a_newcomer(live_app, new_page, journey, width):
    size = (width, 844 if width < 800 else 900)
    suffix = str(width)
    pk = live_app.manage("shell", "-c", SETUP.format(args=json.dumps([suffix, PASSWORD]))).split()[-1]
    settings_url = f"{live_app.url}/collections/{pk}/settings/"
    owner = new_page(*size)
    owner.on("dialog", lambda dialog: dialog.accept())
    log_in(owner, live_app, f"aino{suffix}", PASSWORD)
    owner.goto(settings_url)
    no_overflow(owner)

    # Typing the start of a username suggests her (not the student of a similar name); the keyboard picks.
    box = owner.get_by_role("combobox", name="Add by username or email address")
    box.press_sequentially(f"kielo{suffix[0]}")  # other widths' Kielos share the live app
    options = owner.get_by_role("listbox", name="Teachers found").get_by_role("option")
    expect(options).to_have_count(1)
    expect(options.first).to_have_text(f"Kielo Korhonen (kielo{suffix})")
    journey.look(owner, "suggestions")
    box.press("ArrowDown")
    box.press("Enter")
    expect(owner.get_by_role("checkbox", name=f"Kielo Korhonen (kielo{suffix})")).to_be_checked()
    expect(owner.get_by_role("status").filter(has_text="added")).to_contain_text("Save to make it so.")
    owner.get_by_role("button", name="Save settings").click()
    expect(owner.get_by_text("Settings saved.")).to_be_visible()
    no_overflow(owner)

    # Kielo now reaches the collection.
    kielo = new_page(*size)
    log_in(kielo, live_app, f"kielo{suffix}", PASSWORD)
    kielo.goto(settings_url)
    expect(kielo.get_by_text("Only the collection's owner can change its co-owners.")).to_be_visible()
    no_overflow(kielo)

    # An address nobody has: the picker says so and offers it for an invitation link.
    owner.goto(settings_url)
    no_overflow(owner)
    newcomer_address = f"uusi{suffix}@uni.example"
    box = owner.get_by_role("combobox", name="Add by username or email address")
    box.fill(newcomer_address)
    expect(owner.get_by_role("status").filter(has_text="No teacher has the address")).to_contain_text("invite them")
    expect(owner.get_by_label("Their email address")).to_have_value(newcomer_address)
    box.fill("")
    owner.get_by_role("button", name="Make an invitation link").click()
    expect(owner.get_by_test_id("new-invitation")).to_contain_text("it is not shown again")
    link = owner.get_by_label("Invitation link").input_value()
    expect(owner.get_by_test_id("pending-invitations")).to_contain_text(newcomer_address)
    journey.look(owner, "invitation-made")

    # The newcomer makes a teacher account from the link and lands in the collection.
    newcomer = new_page(*size)
    newcomer.goto(link)
    expect(newcomer.get_by_test_id("invitation")).to_contain_text("invites you to co-own the material collection")
    journey.look(newcomer, "invitation-opened")
    newcomer.get_by_label("Username").fill(f"uusi{suffix}")
    newcomer.get_by_label("First name").fill("Ulla")
    newcomer.get_by_label("Password", exact=True).fill("ullan-salasana-987")
    newcomer.get_by_label("Password confirmation").fill("ullan-salasana-987")
    newcomer.get_by_role("button", name="Make my account and accept").click()
    expect(newcomer.get_by_text(f"You are now a co-owner of the collection “Tilastotiede {suffix}”.")).to_be_visible()
    journey.look(newcomer, "newcomer-co-owns")

    # The link is used up; a second one, withdrawn, says so too.
    newcomer.goto(link)
    expect(newcomer.get_by_test_id("invitation-refusal")).to_contain_text("already been used")
    no_overflow(newcomer)
    owner.goto(settings_url)
    no_overflow(owner)
    expect(owner.get_by_role("checkbox", name=f"Ulla (uusi{suffix})")).to_be_checked()
    expect(owner.get_by_test_id("pending-invitations")).to_have_count(0)
    owner.get_by_label("Their email address").fill(f"toinen{suffix}@uni.example")
    owner.get_by_role("button", name="Make an invitation link").click()
    second = owner.get_by_label("Invitation link").input_value()
    owner.get_by_role("button", name=f"Withdraw the invitation for toinen{suffix}@uni.example").click()
    expect(owner.get_by_text("is withdrawn; its link no longer works.")).to_be_visible()
    no_overflow(owner)
    visitor = new_page(*size)
    visitor.goto(second)
    expect(visitor.get_by_test_id("invitation-refusal")).to_contain_text("has withdrawn it")
    journey.look(visitor, "withdrawn-link")

    # Unticking Kielo removes her; her next click finds nothing.
    owner.goto(settings_url)
    no_overflow(owner)
    owner.get_by_role("checkbox", name=f"Kielo Korhonen (kielo{suffix})").uncheck()
    owner.get_by_role("button", name="Save settings").click()
    expect(owner.get_by_text("Settings saved.")).to_be_visible()
    no_overflow(owner)
    kielo.reload()
    expect(kielo.get_by_text("There is no such collection, or it is not shared with you.")).to_be_visible()
    journey.look(kielo, "removed-co-owner")
