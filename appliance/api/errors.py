"""API errors: Django ValidationErrors from services become 400s naming the field."""

from django.core.exceptions import ValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

from hostlib.errors import HostError


def exception_handler(exc, context):
    if isinstance(exc, ValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, HostError):
        exc = exceptions.ValidationError({"non_field_errors": [str(exc)]})
    return drf_exception_handler(exc, context)
