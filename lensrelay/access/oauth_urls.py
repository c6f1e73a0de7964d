"""The OAuth routes: discovery documents at the server's root, the authorization server under /oauth/.

All in django-oauth-toolkit's `oauth2_provider` namespace, which its metadata views reverse.
"""

from __future__ import annotations

from django.urls import path, re_path
from oauth2_provider import views as dot

from lensrelay.access.oauth_server import ConsentView, ServerMetadataView

patterns = [
    path(
        ".well-known/oauth-authorization-server",
        ServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource",
        dot.OAuthProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    # RFC 9728's path form: /.well-known/oauth-protected-resource/mcp describes http(s)://host/mcp.
    re_path(
        r"^\.well-known/oauth-protected-resource/(?P<resource_path>mcp|api)$",
        dot.OAuthProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata-path",
    ),
    path("oauth/authorize/", ConsentView.as_view(), name="authorize"),
    path("oauth/token/", dot.TokenView.as_view(), name="token"),
    path("oauth/revoke/", dot.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register/", dot.DynamicClientRegistrationView.as_view(), name="dcr-register"),
    # RFC 7592: a client reads, updates or deletes its own registration with its registration token.
    path(
        "oauth/register/<str:client_id>/",
        dot.DynamicClientRegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]

urlpatterns = (patterns, "oauth2_provider")
