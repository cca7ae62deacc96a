"""Raw-HTTP helpers for the sandbox contract tests: no workbench client code on purpose."""

from __future__ import annotations

import html

import httpx

from workbench import spec
from workbench.sandbox import Sandbox


def token_form(sb: Sandbox, role: str) -> dict[str, str]:
    c = sb.credentials
    if role == "international":
        return {
            "client_id": c.intl_client_id,
            "client_secret": c.intl_client_secret,
            "username": c.intl_username,
            "password": c.intl_password,
            "grant_type": "password",
            "scope": spec.INTL_SCOPE,
        }
    ids = {
        "domestic": (c.domestic_client_id, c.domestic_client_secret, spec.DOMESTIC_SCOPE),
        "supplier": (c.supplier_client_id, c.supplier_client_secret, spec.EXCHANGE_SCOPE),
        "consumer": (c.consumer_client_id, c.consumer_client_secret, spec.EXCHANGE_SCOPE),
    }
    client_id, secret, scope = ids[role]
    return {
        "client_id": client_id,
        "client_secret": secret,
        "grant_type": "client_credentials",
        "scope": scope,
    }


def request_token(sb: Sandbox, form: dict[str, str]) -> httpx.Response:
    return httpx.post(sb.auth_url + spec.TOKEN_PATH, data=form)


def token(sb: Sandbox, role: str) -> str:
    response = request_token(sb, token_form(sb, role))
    response.raise_for_status()
    return response.json()["access_token"]


def gateway(sb: Sandbox, role: str = "international") -> httpx.Client:
    return httpx.Client(
        base_url=sb.gateway_url,
        headers={
            "Authorization": f"Bearer {token(sb, role)}",
            "Subscription-Key": sb.credentials.subscription_key,
            "Accept": "application/json",
        },
    )


def exchange(sb: Sandbox, role: str) -> httpx.Client:
    return httpx.Client(
        base_url=sb.exchange_url, headers={"Authorization": f"bearer {token(sb, role)}"}
    )


def path(template: str, request_id: str) -> str:
    return template.format(id=request_id)


def pescxml(item: dict[str, str]) -> str:
    """The XML of a detail item, whatever the key's case, unescaped once if it was escaped."""
    value = next(v for k, v in item.items() if k.lower() == "pescxml")
    return html.unescape(value) if value.lstrip().startswith("&lt;") else value
