"""Bring your own NLI model (docs/verifier.md, "Bring your own model").

python manage.py verifier_model status
python manage.py verifier_model install DIR [--min-accuracy 0.6]
python manage.py verifier_model reset
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from judges.verification import model_store, nli_model_dir
from judges.verifier.model_store import DEFAULT_MIN_ACCURACY, ModelRefused, install, read_active, reset

PACKAGED = "the packaged verifier (MiniLM embeddings, fact alignment, cross-encoder and combiner)"


class Command(BaseCommand):
    help = "Show, install or reset the NLI cross-encoder the verifier runs."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("status", help="which verifier runs")
        inst = sub.add_parser("install", help="validate an ONNX NLI cross-encoder folder and switch to it")
        inst.add_argument("directory", help="folder with model.onnx, tokenizer.json and config.json")
        inst.add_argument(
            "--min-accuracy",
            type=float,
            default=DEFAULT_MIN_ACCURACY,
            help=f"refuse a model below this accuracy on the smoke set (default {DEFAULT_MIN_ACCURACY})",
        )
        sub.add_parser("reset", help="back to the packaged verifier")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _store(self) -> Path:
        store = model_store()
        if store is None:
            raise CommandError("VERIFIER_MODEL_STORE is empty: set it to a folder every web and worker process reads")
        return store

    def _status(self, options) -> None:
        store = model_store()
        active = read_active(store)
        self.stdout.write(f"model store: {store or '(none: VERIFIER_MODEL_STORE is empty)'}")
        if settings.VERIFIER_NLI_MODEL_DIR:
            self.stdout.write(
                f"runs: the NLI model in {settings.VERIFIER_NLI_MODEL_DIR} (pinned by VERIFIER_NLI_MODEL_DIR)"
            )
            if active:
                self.stdout.write(f"installed but not running while the pin is set: {active['path']}")
            return
        if not active:
            self.stdout.write(f"runs: {PACKAGED}")
            return
        smoke = active.get("smoke") or {}
        self.stdout.write(f"runs: the installed NLI model {active['path']}")
        self.stdout.write(f"  installed {active.get('installed_at')} from {active.get('source')}")
        self.stdout.write(f"  labels {active.get('labels')}, inputs {active.get('inputs')}")
        self.stdout.write(
            f"  smoke set: accuracy {smoke.get('accuracy')} on {smoke.get('pairs')} pairs, "
            f"{smoke.get('ms_per_pair')} ms a pair"
        )
        if not Path(active["path"]).is_dir():
            self.stderr.write(f"warning: {active['path']} is missing; checks fall back as the NLI path does")

    def _install(self, options) -> None:
        store = self._store()
        try:
            record, result = install(Path(options["directory"]), store, min_accuracy=options["min_accuracy"])
        except ModelRefused as exc:
            raise CommandError(f"refused: {exc}. Nothing was changed.") from exc
        per_label = ", ".join(f"{k} {v}" for k, v in result.per_label.items())
        self.stdout.write(
            f"smoke set: accuracy {result.accuracy:.3f} on {result.pairs} pairs ({per_label}), "
            f"{result.ms_per_pair:.2f} ms a pair"
        )
        self.stdout.write(self.style.SUCCESS(f"installed {record['path']}: the verifier now runs it"))
        if settings.VERIFIER_NLI_MODEL_DIR:
            self.stderr.write(
                f"warning: VERIFIER_NLI_MODEL_DIR={settings.VERIFIER_NLI_MODEL_DIR} is set and runs instead "
                "until it is unset"
            )
        elif nli_model_dir() != record["path"]:
            self.stderr.write("warning: the store did not switch; check VERIFIER_MODEL_STORE")

    def _reset(self, options) -> None:
        was = reset(self._store())
        self.stdout.write(f"runs: {PACKAGED}" + ("" if was else " (it already did)"))
