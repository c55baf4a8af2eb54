"""The documentation: a short README, user docs that speak to users, and an endpoint reference in step
with the API. (`mkdocs build --strict` in `make lint` checks links and the nav; tests/test_doc_examples.py
runs the examples.)"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The changelog is where dated history lives; every other page speaks to users of the product as it is.
USER_DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if p.name != "changelog.md")]
FENCED = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
INTERNAL = {
    "an issue number": re.compile(r"\b(issue|finding)s? \d+", re.I),
    "the spec's seed": re.compile(r"\bseed(?:'s| \d{3}\b)", re.I),
    "a dated lab note": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
}


def prose(text: str) -> str:
    """The text a reader reads as prose: code blocks and inline code are examples, not notes."""
    return INLINE_CODE.sub("", FENCED.sub("", text))


def test_readme_is_a_front_door_of_a_few_screens():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert len(readme.encode()) <= 12_000
    assert "![" in readme and (ROOT / "docs" / "img" / "overview.png").exists()
    for step in ("make run", "admin@demo.local / groundrule-demo", "pip install ./client", "make test"):
        assert step in readme
    assert "--scope admin" in readme, "the README says how to make an admin key"


@pytest.mark.parametrize(
    "page",
    USER_DOCS,
)
def test_user_docs_carry_no_internal_references_or_dated_notes(page):
    text = prose((ROOT / page).read_text())
    found = {what: pattern.findall(text) for what, pattern in INTERNAL.items()}
    assert not any(found.values()), f"{page}: {found} (dated history belongs in docs/changelog.md)"


@pytest.mark.django_db
def test_endpoint_reference_is_what_the_openapi_schema_says():
    from governance.management.commands.api_reference import PAGE, api_reference_markdown

    assert PAGE.read_text() == api_reference_markdown(), (
        "docs/api-reference.md is out of date: run `python manage.py api_reference` (or `make docs`)"
    )


def test_every_sdk_install_line_names_the_checkout_and_an_extra_it_has():
    import tomllib

    extras = set(tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    lines = [
        (page, line.strip())
        for page in [*USER_DOCS, "client/README.md"]
        for line in (ROOT / page).read_text().splitlines()
        if "pip install" in line and "client" in line
    ]
    assert lines
    for page, line in lines:
        named = re.findall(r"\./client\[([\w-]+)\]", line)
        # From this checkout, or (a CI job in another repository) the client folder of this repository.
        assert "./client" in line or "#subdirectory=client" in line, f"{page}: {line}"
        assert set(named) <= extras, f"{page}: {line} names an extra client/pyproject.toml does not have"
    assert not [
        (page, line) for page in USER_DOCS for line in (ROOT / page).read_text().splitlines() if '"groundrule[' in line
    ], "groundrule is not on a package index: install it from ./client"


@pytest.mark.parametrize("page", [p for p in USER_DOCS if p != "README.md"])
def test_doc_pages_point_at_pages_not_at_readme_sections_that_moved(page):
    # The README is a front door now: its old sections ("Retention", "Benchmarks", ...) are pages of the site.
    stale = re.findall(r'README(?:,| section)? "[^"]+"', prose((ROOT / page).read_text()))
    assert not stale, f"{page}: {stale}"


def test_deploy_guide_points_at_the_full_settings_table():
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert "[Settings](settings.md)" in deploy and "TRUSTED_PROXY_COUNT" in deploy
