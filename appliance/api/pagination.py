"""API pagination: limit/offset, 50 by default and never more than 500 rows a page."""

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500

    def get_count(self, queryset):
        """A queryset that knows how many rows it has (counted by an index its page's query cannot use, e.g.
        pools.selectors.snapshot_search's broad prefix) is not counted again."""
        known = getattr(queryset, "known_count", None)
        return known if known is not None else super().get_count(queryset)
