"""Keyset (cursor) pagination by id, shared by every list endpoint."""

from rest_framework import exceptions
from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    ordering = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def decode_cursor(self, request):
        """A cursor the client tampered with is bad input (400), not a missing page or a 500.

        DRF answers 404 for an undecodable cursor and hands a non-numeric position straight to
        the id filter, which raised ValueError.
        """
        invalid = exceptions.ValidationError({self.cursor_query_param: ["Invalid cursor."]})
        try:
            cursor = super().decode_cursor(request)
        except exceptions.NotFound:
            raise invalid from None
        if cursor is not None and cursor.position is not None:
            position = cursor.position
            if not (position.isascii() and position.isdigit()) or int(position) > 2**63 - 1:
                raise invalid
        return cursor
