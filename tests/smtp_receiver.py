"""An SMTP server on loopback for the tests: speaks enough of RFC 5321 (EHLO, AUTH PLAIN, MAIL, RCPT,
DATA, QUIT) for Django's SMTP backend, and keeps each message it accepts. The standard library's
smtpd is gone from Python 3.12, and no package of the project provides one."""

import base64
import email
import socketserver
import threading
from dataclasses import dataclass


@dataclass
class Delivered:
    sender: str
    recipients: list[str]
    message: email.message.Message
    login: str | None


class _Handler(socketserver.StreamRequestHandler):
    def reply(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self):
        sender, recipients, login = "", [], None
        self.reply("220 localhost test SMTP")
        while line := self.rfile.readline():
            command = line.decode().rstrip("\r\n")
            verb = command.split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250-localhost")
                self.reply("250 AUTH PLAIN")
            elif verb == "AUTH":
                # AUTH PLAIN <base64 of "\0user\0password">, as smtplib sends it
                login = base64.b64decode(command.split(" ")[2]).decode().split("\0")[1]
                self.reply("235 Authenticated")
            elif verb == "MAIL":
                sender = command.split(":", 1)[1].strip().strip("<>")
                self.reply("250 OK")
            elif verb == "RCPT":
                recipients.append(command.split(":", 1)[1].strip().strip("<>"))
                self.reply("250 OK")
            elif verb == "DATA":
                self.reply("354 End data with <CR><LF>.<CR><LF>")
                lines = []
                while (data := self.rfile.readline()) not in (b".\r\n", b""):
                    lines.append(data[1:] if data.startswith(b"..") else data)
                message = email.message_from_bytes(b"".join(lines))
                with self.server.receiver.lock:
                    self.server.receiver.delivered.append(Delivered(sender, recipients, message, login))
                sender, recipients = "", []
                self.reply("250 Queued")
            elif verb == "RSET":
                sender, recipients = "", []
                self.reply("250 OK")
            elif verb == "QUIT":
                self.reply("221 Bye")
                return
            else:
                self.reply("502 Not implemented")


class SmtpReceiver:
    def __init__(self):
        self.delivered: list[Delivered] = []
        self.lock = threading.Lock()
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.receiver = self
        self.port = self._server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
