"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives: the app's mail goes out
through Django's SMTP backend unchanged and arrives here as parsed messages."""

from __future__ import annotations

import email
import threading
from email.message import EmailMessage
from email.policy import default

from aiosmtpd.controller import Controller

from scripts.redis_stack import free_port


class Inbox:
    """aiosmtpd's handler: every message delivered, parsed, with the envelope's recipients."""

    def __init__(self):
        self.messages: list[EmailMessage] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd calls handle_<SMTP command>
        message = email.message_from_bytes(envelope.content, policy=default)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        with self._lock:
            self.messages.append(message)
        return "250 Message accepted for delivery"

    def bodies(self) -> list[str]:
        return [m.get_body(preferencelist=("plain",)).get_content() for m in self.messages]


class SmtpServer:
    def __init__(self):
        self.inbox = Inbox()
        self.port = free_port()
        self._controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()
