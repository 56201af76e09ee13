"""AWS Deep Learning Container images, resolved through the SageMaker Python SDK's own tables,
for every kind that deploys one (registered as the registry's image resolver: planning's shared
container check calls it for every kind that runs catalog containers).

Why the SDK and not a hand-kept URI: the registry account that holds AWS's containers differs by
region (763104351884 in most, 217643126080 in me-south-1, 871362719292 in ap-east-1, ...), and the
SDK also knows which versions and tags exist. `sagemaker.core.image_uris.retrieve` answers from
JSON tables the package ships, so resolution is offline: nothing here calls AWS. Importing the SDK
takes about a second (docs/sagemaker.md has the figure), so it is imported inside these functions,
which only plan calls; a planned target carries the URI (ContainerImage.uri) and nothing downstream
imports the SDK again.
"""

from __future__ import annotations

import functools
from typing import Any

from llmbench.backends import registry
from llmbench.backends.registry import ConfigError, ResolvedImage

__all__ = ["resolve", "sdk_regions", "sdk_version", "sdk_versions"]

SCOPE = "inference"  # every image llmbench deploys serves; none trains


def sdk_version() -> str:
    """The installed SageMaker SDK's version (sagemaker-core, where image_uris lives)."""
    from importlib.metadata import version

    return version("sagemaker-core")


@functools.cache
def _subtrees(framework: str) -> list[dict[str, Any]]:
    """The framework's inference tables (the SDK nests some under a scope key, some not)."""
    from sagemaker.core import image_uris

    config = image_uris.config_for_framework(framework)
    if SCOPE in config:
        return [config[SCOPE]]
    if "versions" in config and SCOPE in config.get("scope", [SCOPE]):
        return [config]
    return []


@functools.cache
def _frameworks() -> frozenset[str]:
    """The frameworks the SDK has tables for (listing reads every table: once per process)."""
    from sagemaker.core import image_uris

    return frozenset(image_uris.list_frameworks())


@functools.cache
def sdk_versions(framework: str) -> tuple[str, ...]:
    """The versions the SDK lists for the framework (concrete and aliases, ascending)."""
    from sagemaker.core import image_uris

    return tuple(image_uris.list_versions(framework, SCOPE))


def _concrete(framework: str) -> list[str]:
    """The concrete versions (not aliases), newest last."""
    from sagemaker.core import image_uris

    versions = {v for t in _subtrees(framework) for v in t.get("versions", {})}
    return sorted(versions, key=image_uris._version_sort_key)


def sdk_regions(framework: str) -> set[str]:
    """Every region the SDK serves the framework in, over all its versions."""
    return {region for t in _subtrees(framework) for v in t.get("versions", {}).values() for region in _registries(v)}


def _registries(version_config: dict[str, Any]) -> dict[str, str]:
    if "registries" in version_config:
        return dict(version_config["registries"])
    # Some frameworks nest a level per Python version.
    return {r: a for sub in version_config.values() if isinstance(sub, dict) for r, a in _registries(sub).items()}


def _retrieve(framework: str, region: str, version: str) -> str:
    from sagemaker.core import image_uris

    # No instance type: each framework llmbench names has one processor (gpu, or neuronx), and
    # the SDK's instance-type rules know only SageMaker's ml.* names (other kinds ask here too).
    try:
        return str(image_uris.retrieve(framework=framework, region=region, version=version, image_scope=SCOPE))
    except ValueError as e:  # an argument the tables want that llmbench does not give (one line of it)
        raise ConfigError(f"{framework} {version} in {region}: the SDK refuses it: {str(e).splitlines()[0]}") from None


def _version_regions(framework: str, version: str) -> set[str]:
    """The regions the SDK serves one version (or alias) of the framework in."""
    out: set[str] = set()
    for t in _subtrees(framework):
        concrete = t.get("version_aliases", {}).get(version, version)
        if concrete in t.get("versions", {}):
            out |= set(_registries(t["versions"][concrete]))
    return out


def _split(uri: str) -> tuple[str, str]:
    """(registry host, repository:tag)."""
    host, _, rest = uri.partition("/")
    return host, rest


def _range(versions: list[str]) -> str:
    return f"{versions[0]}..{versions[-1]}" if len(versions) > 2 else ", ".join(versions)


@functools.cache  # a plan asks once per target; the answer depends only on the arguments
def resolve(
    framework: str,
    version: str,
    region: str,
    *,
    pin: str | None = None,
    pin_reason: str | None = None,
) -> ResolvedImage:
    """The image of an AWS deep learning container in a region, from the SDK's tables. With a pin
    (repository:tag), the pin is deployed from the registry the SDK gives for the region, and the
    result carries a warning with both values when the SDK maps the version to another tag or lists
    no such version. Raises ConfigError for a framework the SDK does not know, a region it does not
    serve the framework in, or a version it does not list and no pin."""
    sdk = f"SageMaker SDK (sagemaker-core {sdk_version()})"
    if framework not in _frameworks():
        raise ConfigError(f"framework {framework!r}: the {sdk} has no such image table")
    concrete = _concrete(framework)
    listed = version in sdk_versions(framework)
    asked = version if listed else concrete[-1]  # unlisted + pin: the newest version's registries
    regions = _version_regions(framework, asked)
    if region not in regions:
        raise ConfigError(
            f"region {region}: the {sdk} serves no {framework} {asked} image there (it serves it in {sorted(regions)})"
        )
    why = f" ({pin_reason})" if pin_reason else ""
    if listed:
        sdk_uri = _retrieve(framework, region, version)
        how = f"{sdk} image_uris.retrieve({framework!r}, {region!r}, {version!r})"
        host, sdk_tag = _split(sdk_uri)
        if pin is None or pin == sdk_tag:
            return ResolvedImage(sdk_uri, how, sdk_uri)
        return ResolvedImage(
            f"{host}/{pin}",
            f"catalog pin on the SDK's {framework} registry for {region}; {how} answers {sdk_tag}",
            sdk_uri,
            f"image pin: the {sdk} maps {framework} {version} to {sdk_tag}; the catalog pins {pin}{why}",
        )
    if pin is None:
        raise ConfigError(f"{framework} {version}: the {sdk} lists no such version (it lists {_range(concrete)})")
    # The newest listed version's image gives the registry host in this region.
    host, _ = _split(_retrieve(framework, region, asked))
    return ResolvedImage(
        f"{host}/{pin}",
        f"catalog pin on the SDK's {framework} registry for {region}; the SDK lists no {framework} {version}",
        None,
        f"image pin: the {sdk} lists no {framework} {version} (it lists {_range(concrete)}); the catalog keeps "
        f"{pin}{why}",
    )


registry.register_image_resolver(
    lambda framework, version, region, pin, pin_reason: resolve(
        framework, version, region, pin=pin, pin_reason=pin_reason
    )
)
