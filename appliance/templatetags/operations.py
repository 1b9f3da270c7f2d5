"""An operation in words on a page: {{ op|operation_title }}, and {{ op|operation_back }} -> (label, url) or None."""

from django import template

from appliance import titles

register = template.Library()


@register.filter
def operation_title(op) -> str:
    return titles.operation_title(op)


@register.filter
def operation_back(op):
    return titles.operation_back(op)
