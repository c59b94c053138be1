"""Campus sign-in's settings: a bad or incomplete value stops start-up with a sentence naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _check(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY")}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={**clean, "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "sentence"),
    [
        ({"LOCAL_LOGIN": "sometimes"}, "LOCAL_LOGIN must be all, staff or off (got 'sometimes')."),
        ({"LOCAL_LOGIN": "off"}, "LOCAL_LOGIN=off needs campus sign-in: set OIDC_ISSUER or SAML_IDP_METADATA"),
        ({"OIDC_ISSUER": "login.uni.example"}, "OIDC_ISSUER must start with https://, http://"),
        (
            {"OIDC_ISSUER": "https://login.uni.example"},
            "OIDC_ISSUER is set: set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too.",
        ),
        (
            {
                "OIDC_ISSUER": "https://login.uni.example",
                "OIDC_CLIENT_ID": "c",
                "OIDC_CLIENT_SECRET": "s",
                "OIDC_SCOPES": "email",
            },
            "OIDC_SCOPES must include openid (got 'email').",
        ),
        ({"SAML_IDP_METADATA": "https://idp.uni.example/metadata"}, "SAML_SP_KEY_FILE must name the SP's PEM file"),
        ({"SSO_LINK_VERIFIED_EMAIL": "perhaps"}, "SSO_LINK_VERIFIED_EMAIL must be one of 1/0"),
        (
            {
                "SAML_IDP_ENTITY_ID": "https://idp.uni.example/idp/shibboleth",
                "SAML_IDP_ENTITY_IDS": "https://idp.other.example/idp/shibboleth",
            },
            "SAML_IDP_ENTITY_ID ('https://idp.uni.example/idp/shibboleth') must be one of SAML_IDP_ENTITY_IDS",
        ),
        (
            {
                "SAML_IDP_METADATA": "https://idp.uni.example/md",
                "SAML_SP_KEY_FILE": "manage.py",
                "SAML_SP_CERT_FILE": "manage.py",
            },
            "SAML_IDP_METADATA is a URL: set SAML_IDP_METADATA_CERT",
        ),
    ],
)
def test_a_bad_sign_in_setting_stops_start_up_with_a_sentence_naming_it(env, sentence):
    result = _check(env)
    assert result.returncode != 0
    assert sentence in result.stderr, result.stderr[-800:]


def test_with_no_sign_in_settings_the_app_starts_as_before():
    assert _check({}).returncode == 0
