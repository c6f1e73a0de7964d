"""Every change list filters only through what its filters offer: no lookup on a model's own fields, so no
secret can be bisected through the row count (the first finding of the third trust round: a webhook's
signing secret recovered in 267 requests by staff who could only view endpoints)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin import ModelAdmin as DjangoModelAdmin
from django.contrib.auth.models import Permission, User
from django.core import checks
from django.test import Client
from oauth2_provider.models import AccessToken, Application

from lensrelay.adminbase import FilteredLookupsOnly, ModelAdmin, check_admins_filter_lookups_only
from lensrelay.models import ApiToken, Folder
from lensrelay.webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

# A field whose name says it holds a credential, a secret or a hash of one must be declared secret.
SECRET_NAMES = re.compile(r"(secret|password|token_hash|checksum|^code$|^code_challenge$|^token$)")


def staff(name: str, *codenames: str) -> Client:
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def changelist(model: Any) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


def test_a_view_only_staff_user_cannot_bisect_a_webhook_secret() -> None:
    hook = WebhookEndpoint.objects.create(name="hook", url="https://93.184.215.14/hook", all_folders=True)
    viewer = staff("vera", "view_webhookendpoint")
    assert viewer.get(changelist(WebhookEndpoint)).status_code == 200
    # The attack as reported: one bit per request from the count, for the first and for a later character.
    for probe in (hook.secret[:7], "whsec_M", hook.secret[:20] + "~"):
        for lookup in ("secret__lt", "secret__startswith", "secret__gte", "secret", "secret__regex"):
            response = viewer.get(changelist(WebhookEndpoint), {"id": hook.pk, lookup: probe})
            assert response.status_code == 400, (lookup, probe)
            assert b"webhook endpoint" not in response.content
    # Each half of the bisection answers alike: nothing tells a right guess from a wrong one.
    right = viewer.get(changelist(WebhookEndpoint), {"secret__startswith": hook.secret[:10]})
    wrong = viewer.get(changelist(WebhookEndpoint), {"secret__startswith": "whsec_zzzz"})
    assert (right.status_code, right.content) == (wrong.status_code, wrong.content)
    # Nor through a relation from another change list.
    viewer_of_deliveries = staff("dora", "view_webhookdelivery")
    response = viewer_of_deliveries.get(
        "/admin/lensrelay/webhookdelivery/", {"endpoint__secret__lt": "whsec_M"}
    )
    assert response.status_code == 400


def test_no_model_field_is_filterable_unless_a_filter_offers_it() -> None:
    """Every registered admin, every concrete field, a few lookups: refused unless a filter makes it."""
    root = Client()
    root.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    tried = 0
    for model, model_admin in admin.site._registry.items():
        request = root.get(changelist(model)).wsgi_request
        offered = model_admin.offered_lookups(request)
        for field in model._meta.get_fields():
            if not field.concrete:
                continue
            for lookup in (
                field.name,
                f"{field.name}__startswith",
                f"{field.name}__lt",
                f"{field.name}__isnull",
            ):
                if lookup in offered:
                    continue
                response = root.get(changelist(model), {lookup: "a"})
                assert response.status_code == 400, (model._meta.label, lookup)
                tried += 1
    assert tried > 200


def test_what_the_filters_offer_still_filters() -> None:
    root = Client()
    root.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    lens, other = Folder.objects.create(name="Lens"), Folder.objects.create(name="Other")
    token = ApiToken(name="one", role=ApiToken.Role.VIEW)
    token.set_raw(ApiToken.generate_raw())
    token.save()
    token.folders.set([lens])
    page = root.get(changelist(ApiToken), {"folders__id__exact": lens.pk, "role__exact": "view"})
    assert page.status_code == 200 and b"1 API token" in page.content
    page = root.get(changelist(ApiToken), {"folders__id__exact": other.pk})
    assert page.status_code == 200 and b"0 API tokens" in page.content
    # The links other pages build onto the suggestions list, and its status filter.
    for query in ({"folder__id__exact": lens.pk}, {"status": "all"}, {"kind__exact": "edit"}):
        assert root.get("/admin/suggestions/suggestion/", query).status_code == 200, query
    # Every filter choice the pages themselves link to opens.
    for model in admin.site._registry:
        page = root.get(changelist(model))
        assert page.status_code == 200, model
        for href in set(re.findall(r'href="(\?[^"]+)"', page.content.decode())):
            query = href.replace("&amp;", "&")
            assert root.get(changelist(model) + query).status_code == 200, (model._meta.label, query)


def test_library_admins_are_guarded_too() -> None:
    root = Client()
    root.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    app = Application.objects.create(
        name="c",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="https://c/cb",
    )
    AccessToken.objects.create(
        token="secret-access-token-value", application=app, expires="2099-01-01T00:00Z"
    )
    for path, query in (
        ("/admin/auth/user/", {"password__startswith": "pbkdf2"}),
        ("/admin/oauth2_provider/accesstoken/", {"token__startswith": "secret"}),
        ("/admin/oauth2_provider/accesstoken/", {"token_checksum__lt": "8"}),
        ("/admin/oauth2_provider/application/", {"client_secret__startswith": "pbkdf2"}),
        ("/admin/oauth2_provider/grant/", {"code__startswith": "a"}),
        ("/admin/oauth2_provider/refreshtoken/", {"token__startswith": "a"}),
        ("/admin/lensrelay/apitoken/", {"token_hash__startswith": "a"}),
    ):
        assert root.get(path, query).status_code == 400, (path, query)


def test_every_secret_looking_field_is_declared_secret() -> None:
    for model, model_admin in admin.site._registry.items():
        for field in model._meta.get_fields():
            holds_text = field.get_internal_type() in ("CharField", "TextField")
            if field.concrete and holds_text and SECRET_NAMES.search(field.name):
                assert field.name in model_admin.secret_fields, (model._meta.label, field.name)


def test_the_system_check_refuses_a_bare_admin_and_an_offered_secret() -> None:
    assert check_admins_filter_lookups_only() == []
    site = admin.site

    class Bare(DjangoModelAdmin):  # type: ignore[type-arg]
        pass

    class Leaky(ModelAdmin):
        secret_fields = ("secret",)
        search_fields = ("name", "secret")

    class Sorted(ModelAdmin):
        secret_fields = ("secret",)
        list_display = ("name", "secret")

    registered = site._registry[WebhookEndpoint]
    try:
        for admin_class, error_id in (
            (Bare, "lensrelay.E101"),
            (Leaky, "lensrelay.E102"),
            (Sorted, "lensrelay.E102"),
        ):
            site._registry[WebhookEndpoint] = admin_class(WebhookEndpoint, site)
            found = [e for e in check_admins_filter_lookups_only() if isinstance(e, checks.Error)]
            assert [e.id for e in found] == [error_id], admin_class
            assert "lensrelay.WebhookEndpoint" in found[0].msg
    finally:
        site._registry[WebhookEndpoint] = registered
    assert isinstance(registered, FilteredLookupsOnly)
