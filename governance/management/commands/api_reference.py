"""Write docs/api-reference.md from the OpenAPI schema the server serves (`make docs` runs it).

`--check` writes nothing and exits 1 when the committed page is out of date.
"""

import re
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import Resolver404, resolve
from drf_spectacular.generators import SchemaGenerator

from core.api.reference import render
from tenants.auth import required_scope

PAGE = Path(settings.BASE_DIR) / "docs" / "api-reference.md"


def _scope_of(path: str, method: str) -> str:
    # Any value that the path's converters accept fills a parameter: only the view class is needed.
    for filler in ("1", "00000000-0000-0000-0000-000000000001"):
        try:
            match = resolve(re.sub(r"\{[^}]+\}", filler, path))
        except Resolver404:
            continue
        return required_scope(match.func.view_class, method)
    raise CommandError(f"No view answers {path}")


def api_reference_markdown() -> str:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return render(schema, _scope_of)


class Command(BaseCommand):
    help = "Write docs/api-reference.md from the OpenAPI schema (--check: fail when it is out of date)."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Write nothing; exit 1 when the page is stale.")

    def handle(self, check, **options):
        page = api_reference_markdown()
        if check:
            if not PAGE.exists() or PAGE.read_text() != page:
                raise CommandError(f"{PAGE} is out of date: run `python manage.py api_reference`.")
            self.stdout.write("docs/api-reference.md is up to date.")
            return
        PAGE.write_text(page)
        self.stdout.write(f"Wrote {PAGE}")
