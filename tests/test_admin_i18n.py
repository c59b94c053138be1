"""The admin speaks the administrator's language: app, model and field names in Finnish and Swedish;
the learning platform form gives the tool's own addresses; the launch address explains itself."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.utils import translation

from accounts.models import User
from lti.models import Platform

OUR_APPS = ("accounts", "chat", "collections_app", "lti", "sso")
# Written the same way in every language.
SAME_EVERYWHERE = {"SHA-256", "ID"}
ADDRESSES = (
    "http://testserver/lti/login/",
    "http://testserver/lti/launch/",
    "http://testserver/lti/jwks/",
    "http://testserver/lti/register/",
)


def _text(response) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def _admin_in(language: str, admin_user: User) -> Client:
    User.objects.filter(pk=admin_user.pk).update(language=language)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")  # the saved language wins over the browser's
    client.force_login(admin_user)
    return client


@pytest.mark.parametrize("label", OUR_APPS)
def test_every_app_model_and_field_has_a_finnish_name(label):
    config = apps.get_app_config(label)
    untranslated = []
    for model in config.get_models():
        opts = model._meta
        names = [("model", opts.verbose_name), ("plural", opts.verbose_name_plural)]
        names += [(f.name, f.verbose_name) for f in opts.get_fields() if f.concrete and not f.auto_created]
        for what, name in names:
            english = str(name)
            with translation.override("fi"):
                finnish = str(name)
            if english == finnish and english not in SAME_EVERYWHERE:
                untranslated.append(f"{opts.label}.{what}: {english}")
    with translation.override("fi"):
        app_name = str(config.verbose_name)
    assert app_name != str(config.verbose_name)
    assert untranslated == []


def test_finnish_admin_index_names_every_app_and_model_in_finnish(admin_user):
    page = _text(_admin_in("fi", admin_user).get("/admin/"))
    assert "Sivuston ylläpito" in page  # Django's own
    for name in ("Kehotteet ja keskustelut", "Lähdemateriaali", "LTI 1.3 (oppimisalustat)", "Kampuskirjautuminen"):
        assert name in page
    for plural in ("Kehotteet", "Liittymiset", "Keskustelut", "Kokoelmat", "Tiedostot", "Testikysymykset"):
        assert plural in page
    assert "Oppimisalustat" in page and "Budjettipoikkeukset" in page
    for english in ("Prompts and chats", "Source material", "Enrollments", "Learning platforms", "Test questions"):
        assert english not in page


def test_finnish_changelist_names_the_model_its_columns_and_filters_in_finnish(admin_user, prompt):
    response = _admin_in("fi", admin_user).get("/admin/chat/prompt/")
    assert response.status_code == 200
    page = _text(response)
    assert "Valitse muokattava kehote" in page  # Django's sentence, our model's name
    for column in ("Omistaja", "Keskustelumalli", "Hakutulosten tarkistus käytössä", "Liittymiskoodi"):
        assert column in page
    assert "käytössä" in page  # the filter "active"
    assert "Lisää kehote" in page
    assert "Join code" not in page and "Chat model" not in page


def test_swedish_admin_names_the_learning_platform_in_swedish(admin_user):
    client = _admin_in("sv", admin_user)
    index = _text(client.get("/admin/"))
    assert "Lärplattformar" in index and "Samlingar" in index and "Prompter och chattar" in index
    add = _text(client.get("/admin/lti/platform/add/"))
    assert "Lägg till lärplattform" in add
    assert "CurreChats adresser för plattformen" in add and "Startadress" in add


def test_learning_platform_form_shows_the_tools_addresses(admin_user):
    client = _admin_in("en", admin_user)
    page = client.get("/admin/lti/platform/add/").content.decode()
    addresses = re.findall(r'<code data-testid="tool-address">([^<]*)</code>', page)
    # Login initiation, launch, key set, deep linking (which a platform sends to the launch address),
    # and the dynamic registration URL that stands for all four.
    assert addresses == [ADDRESSES[0], ADDRESSES[1], ADDRESSES[2], ADDRESSES[1], ADDRESSES[3]]
    text = _text(client.get("/admin/lti/platform/add/"))
    for label in (
        "Login initiation URL",
        "Launch URL",
        "Public key set (JWKS) URL",
        "Deep linking URL",
        "Dynamic registration URL",
    ):
        assert label in text
    # Where they go in Moodle
    assert "Initiate login URL" in text and "Content Selection URL" in text and "Add LTI Advantage" in text


def test_an_existing_platforms_page_shows_the_addresses_in_finnish(admin_user):
    platform = Platform.objects.create(
        name="Moodle", issuer="https://moodle.example.edu", client_id="abc", deployment_ids=["1"],
        auth_login_url="https://moodle.example.edu/mod/lti/auth.php",
        auth_token_url="https://moodle.example.edu/mod/lti/token.php",
        key_set_url="https://moodle.example.edu/mod/lti/certs.php",
    )  # fmt: skip
    text = _text(_admin_in("fi", admin_user).get(f"/admin/lti/platform/{platform.pk}/change/"))
    assert "CurreChatin osoitteet oppimisalustalle" in text and "Kirjautumisen aloitusosoite" in text
    assert "Syvälinkityksen osoite" in text and "Julkisen avainjoukon (JWKS) osoite" in text
    assert all(address in text for address in ADDRESSES)


def test_the_addresses_are_for_the_admin_only(client_for, owner, admin_user):
    assert client_for(owner).get("/admin/lti/platform/add/").status_code == 302


@pytest.mark.parametrize(
    ("language", "heading", "back"),
    [
        ("en", "Your learning platform opens this address", "go back to your course"),
        ("fi", "Oppimisalustasi avaa tämän osoitteen", "palaa kurssillesi"),
        ("sv", "Din lärplattform öppnar den här adressen", "tillbaka till din kurs"),
    ],
)
def test_opening_the_launch_address_by_hand_explains_it(db, language, heading, back):
    response = Client(HTTP_ACCEPT_LANGUAGE=language).get("/lti/launch/")
    assert response.status_code == 405 and response["Allow"] == "POST"
    page = response.content.decode()
    assert f'<html lang="{language}">' in page
    text = _text(response)
    assert heading in text and back in text
    assert "http://testserver/lti/launch/" in text


def test_every_registered_model_of_ours_is_in_the_admin():
    ours = {m for m in admin.site._registry if m._meta.app_label in OUR_APPS}
    assert len(ours) == sum(len(list(apps.get_app_config(label).get_models())) for label in OUR_APPS)
