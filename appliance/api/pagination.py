"""API pagination: limit/offset, 50 by default and never more than 500 rows a page."""

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
