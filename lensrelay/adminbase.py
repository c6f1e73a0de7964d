"""The one base of every model admin: a change list filters only through what its filters offer.

Django's change list applies any query-string lookup on a model's own fields (`?secret__lt=whsec_M`) and
shows how many rows match, so staff who may only view a model could bisect a secret one bit per request:
a webhook's 50-character signing secret fell in 267 requests, a password hash or an OAuth access token
would have too. Here a lookup is allowed only when one of the admin's list filters or its date hierarchy
produces it (and links the project builds, named in `extra_lookups`); anything else is refused with a 400
and a plain message, as Django refuses the relational lookups it does not offer. Fields that hold a
secret or its hash (`secret_fields`) are never offered: a system check refuses them in filters, search
fields, sortable columns and orderings, and refuses any registered admin that does not build on this base.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from django.contrib import admin
from django.contrib.admin import FieldListFilter, SimpleListFilter
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.admin.widgets import url_params_from_lookup_dict
from django.core import checks
from django.http import HttpRequest


class FilteredLookupsOnly:
    """Mixed in before a `ModelAdmin` (ours or a library's): see the module's docstring."""

    # Fields holding a credential, a signing secret or a hash of one.
    secret_fields: ClassVar[tuple[str, ...]] = ()
    # Query parameters that links elsewhere in the project put on this change list.
    extra_lookups: ClassVar[frozenset[str]] = frozenset()

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        if lookup.split("__", 1)[0] in self.secret_fields:
            return False
        return lookup in self.offered_lookups(request) or self._raw_id_popup_lookup(lookup, value)

    def offered_lookups(self, request: HttpRequest | None) -> frozenset[str]:
        """Every query parameter this admin's filters and date hierarchy produce."""
        model_admin: Any = self  # a ModelAdmin: this class is mixed in before one
        filters = model_admin.get_list_filter(request) if request is not None else model_admin.list_filter
        key = tuple(map(repr, filters))
        cached: dict[tuple[str, ...], frozenset[str]] = self.__dict__.setdefault("_offered_lookups", {})
        if key not in cached:
            offered = set(self.extra_lookups)
            offered.update(self._filter_parameters(filters, request))
            if model_admin.date_hierarchy:
                offered.update(f"{model_admin.date_hierarchy}__{part}" for part in ("year", "month", "day"))
            cached[key] = frozenset(offered)
        return cached[key]

    def _filter_parameters(self, filters: Iterable[Any], request: HttpRequest | None) -> Iterable[str]:
        for item in filters:
            if isinstance(item, type) and issubclass(item, SimpleListFilter):
                yield str(item.parameter_name)
                continue
            path, filter_class = item if isinstance(item, (list, tuple)) else (item, FieldListFilter.create)
            model = self.model  # type: ignore[attr-defined]
            field = get_fields_from_path(model, path)[-1]
            # A filter names its parameters when made; the params dict is empty, so it selects nothing.
            spec = filter_class(field, request, {}, model, self, field_path=path)
            yield from (str(name) for name in spec.expected_parameters() if name)

    def _raw_id_popup_lookup(self, lookup: str, value: str) -> bool:
        """The lookups a raw-id popup adds for a foreign key's `limit_choices_to`, as Django allows."""
        for fk_lookup in self.model._meta.related_fkey_lookups:  # type: ignore[attr-defined]
            if callable(fk_lookup):
                fk_lookup = fk_lookup()
            if (lookup, value) in url_params_from_lookup_dict(fk_lookup).items():
                return True
        return False


class ModelAdmin(FilteredLookupsOnly, admin.ModelAdmin):  # type: ignore[type-arg]
    """The project's model admin base."""


def _filter_paths(model_admin: Any) -> Iterable[str]:
    for item in model_admin.list_filter:
        if isinstance(item, (list, tuple)):
            yield str(item[0])
        elif isinstance(item, str):
            yield item
    if model_admin.date_hierarchy:
        yield model_admin.date_hierarchy


def _sortable_fields(model_admin: Any) -> Iterable[str]:
    names = model_admin.sortable_by if model_admin.sortable_by is not None else model_admin.list_display
    for name in names:
        if callable(name):
            yield str(getattr(name, "admin_order_field", "") or "")
            continue
        attribute = getattr(model_admin, name, None)
        yield str(getattr(attribute, "admin_order_field", "") or "") if callable(attribute) else name
    for name in model_admin.ordering or ():
        yield str(name).lstrip("-")


def _names_secret(path: str, secret_fields: tuple[str, ...]) -> bool:
    return path.lstrip("^=@").split("__", 1)[0] in secret_fields


@checks.register(checks.Tags.admin, checks.Tags.security)
def check_admins_filter_lookups_only(**kwargs: Any) -> list[checks.CheckMessage]:
    """Every registered model admin builds on `FilteredLookupsOnly` and offers no secret field."""
    errors: list[checks.CheckMessage] = []
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label
        if not isinstance(model_admin, FilteredLookupsOnly):
            errors.append(
                checks.Error(
                    f"The admin of {label} ({type(model_admin).__qualname__}) does not build on "
                    "lensrelay.adminbase.FilteredLookupsOnly: its change list would filter on any field.",
                    id="lensrelay.E101",
                )
            )
            continue
        secret = model_admin.secret_fields
        offered = [
            *(("filter", path) for path in _filter_paths(model_admin)),
            *(("search field", path) for path in model_admin.search_fields),
            *(("sortable column or ordering", path) for path in _sortable_fields(model_admin)),
        ]
        for where, path in offered:
            if path and _names_secret(path, secret):
                errors.append(
                    checks.Error(
                        f"The admin of {label} offers the secret field {path!r} as a {where}.",
                        id="lensrelay.E102",
                    )
                )
    return errors
