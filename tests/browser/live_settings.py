"""The live app's settings in the browser tests: production's, but for the password hasher.

PBKDF2 spends a deliberate 0.3 s of CPU on every password: at every log-in through the page and for
every user a test's set-up makes, some 150 times a run, on a machine the browser tests keep busy.
Django advises tests to use a fast hasher, and the tests in pytest's own process do
(tests/conftest.py); what a browser test checks does not depend on how a password is hashed.
"""

from currechat.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
