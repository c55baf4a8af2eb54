"""Keyset (cursor) pagination by id, shared by every list endpoint."""

import base64
import binascii

from rest_framework import exceptions
from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    ordering = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request):
        """`page_size` from 1 to `max_page_size`; anything else is a 400 naming it.

        DRF quietly falls back to the default for garbage and clips a huge value: a client asking
        for a million rows deserves to hear that it gets at most 500.
        """
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= self.max_page_size:
            raise exceptions.ValidationError(
                {self.page_size_query_param: [f"Must be a whole number from 1 to {self.max_page_size}."]}
            )
        return int(raw)

    def decode_cursor(self, request):
        """A cursor the client tampered with is bad input (400), not a missing page or a 500.

        DRF answers 404 for an undecodable cursor (a negative offset among them) and hands a
        non-numeric position straight to the id filter, which raised ValueError.
        """
        invalid = exceptions.ValidationError({self.cursor_query_param: ["Invalid cursor."]})
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is not None:
            # DRF's decoder skips characters outside base64, so "%%%" read as an empty cursor: page one.
            try:
                if not base64.b64decode(encoded.encode("ascii"), validate=True):
                    raise invalid
            except (ValueError, binascii.Error):
                raise invalid from None
        try:
            cursor = super().decode_cursor(request)
        except exceptions.NotFound:
            raise invalid from None
        if cursor is not None and cursor.position is not None:
            position = cursor.position
            if not (position.isascii() and position.isdigit()) or int(position) > 2**63 - 1:
                raise invalid
        return cursor

    def get_paginated_response_schema(self, schema):
        link = {
            "type": "string",
            "format": "uri",
            "nullable": True,
            "description": "The page's neighbour, with its cursor; null at either end.",
        }
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {"next": link, "previous": link, "results": schema},
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                # Base64, as decode_cursor requires; which such strings are cursors only the server knows.
                "schema": {"type": "string", "minLength": 4, "pattern": "^[A-Za-z0-9+/]+={0,2}$"},
                "description": "An opaque cursor from `next` or `previous`; anything else is a 400.",
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size, "default": self.page_size},
                "description": f"Rows per page, 1 to {self.max_page_size}; anything else is a 400.",
            },
        ]


class OldestFirstPagination(IdCursorPagination):
    """Rows in the order they were written (a run's reports, evaluations and spans)."""

    ordering = "id"
