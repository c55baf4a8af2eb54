from django.core.management.base import BaseCommand

from tenants import login_throttle


class Command(BaseCommand):
    help = "Clear a person's paused sign-in: every failure count and pause of the account, from every address."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, username, **options):
        cleared = login_throttle.unlock(username=username)
        self.stdout.write(f"Cleared {cleared} sign-in count{'s' if cleared != 1 else ''} for {username}.")
