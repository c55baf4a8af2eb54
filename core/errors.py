class InvalidInput(Exception):
    """Bad input found by a service. `errors` maps each field (nested where the input is) to messages."""

    def __init__(self, errors: dict):
        super().__init__(errors)
        self.errors = errors


class Conflict(Exception):
    """The request is well-formed but the object's state refuses it (e.g. completing a run twice)."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail
