"""ACR's image hosts (k3infra.catalog.acr): the three real forms parse, with what pulling from each needs; the forms
k3infra used to accept and others no page documents do not (issue 23 item 5)."""

import pytest

from k3infra.catalog.acr import AcrEdition, AcrEndpoint, parse_acr_host


@pytest.mark.parametrize("host, parsed", [
    ("registry-vpc.cn-hangzhou.aliyuncs.com", AcrEndpoint(AcrEdition.PERSONAL_LEGACY, "cn-hangzhou", True)),
    ("registry.cn-hangzhou.aliyuncs.com", AcrEndpoint(AcrEdition.PERSONAL_LEGACY, "cn-hangzhou", False)),
    ("crpi-xxxx-vpc.cn-hangzhou.personal.cr.aliyuncs.com",
     AcrEndpoint(AcrEdition.PERSONAL, "cn-hangzhou", True, "xxxx")),
    ("crpi-xxxx.cn-hangzhou.personal.cr.aliyuncs.com", AcrEndpoint(AcrEdition.PERSONAL, "cn-hangzhou", False, "xxxx")),
    ("instance-registry.cn-hangzhou.cr.aliyuncs.com",
     AcrEndpoint(AcrEdition.ENTERPRISE, "cn-hangzhou", False, "instance")),
    ("my-k3-registry-vpc.ap-southeast-1.cr.aliyuncs.com",
     AcrEndpoint(AcrEdition.ENTERPRISE, "ap-southeast-1", True, "my-k3")),
    ("eas-registry-vpc.cn-hangzhou.cr.aliyuncs.com", AcrEndpoint(AcrEdition.ENTERPRISE, "cn-hangzhou", True, "eas")),
])
def test_the_documented_forms_parse(host, parsed):
    assert parse_acr_host(host) == parsed


@pytest.mark.parametrize("host", [
    "registry-vpc.cn-hangzhou.cr.aliyuncs.com", "registry.cn-hangzhou.cr.aliyuncs.com",
    "crpi-xxxx-vpc.cn-hangzhou.cr.aliyuncs.com", "instance-registry-vpc.cn-hangzhou.aliyuncs.com",
    "-registry-vpc.cn-hangzhou.cr.aliyuncs.com", "docker.io", "ghcr.io",
])
def test_undocumented_forms_do_not(host):
    assert parse_acr_host(host) is None


def test_what_each_form_needs():
    new_personal = parse_acr_host("crpi-xxxx-vpc.cn-hangzhou.personal.cr.aliyuncs.com")
    enterprise = parse_acr_host("k3-registry-vpc.cn-hangzhou.cr.aliyuncs.com")
    legacy = parse_acr_host("registry-vpc.cn-hangzhou.aliyuncs.com")
    assert new_personal and enterprise and legacy
    assert (new_personal.needs_secret, new_personal.needs_vpc_link) == (True, False)
    assert (enterprise.needs_secret, enterprise.needs_vpc_link) == (False, True)
    assert (legacy.needs_secret, legacy.needs_vpc_link) == (False, False)
    public = parse_acr_host("crpi-xxxx.cn-hangzhou.personal.cr.aliyuncs.com")
    assert public and not public.can_pull
