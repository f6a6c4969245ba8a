"""Turning spec values into Python values: variables in dependency order, and
hyperparameters by their declared type (strings stay strings where the type is
text or a choice; everything else is an arithmetic expression)."""
from __future__ import annotations

from typing import Any, Literal, Mapping, Union, get_args, get_origin

from .. import expr
from ..errors import ExprError, Fallback, Loc, SpecError, did_you_mean
from ..names import check_name, name_ok
from .yamlload import LocDict


def evaluate(value: Any, env: Mapping[str, Any], loc: Loc, what: str) -> Any:
    """Evaluate a spec value: numbers and bools as they are, strings as expressions, lists element-wise."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        try:
            return expr.check_value(value)
        except ExprError as exc:
            exc.message = f"{what}: {exc.message}"
            raise exc.with_context(loc=loc)
    if isinstance(value, str):
        try:
            return expr.evaluate(value, env)
        except ExprError as exc:
            exc.message = f"{what}: {exc.message} (in '{value}')"
            raise exc.with_context(loc=loc)
    if isinstance(value, list):
        return [evaluate(v, env, loc, what) for v in value]
    raise SpecError(f"{what}: expected a number, an expression or a list; received a {type(value).__name__}",
                    loc=loc, hint=Fallback('give a number, an expression in quotes or a list'))


def _admits_text(typ: Any, value: str) -> bool:
    origin = get_origin(typ)
    if typ is str:
        return True
    if origin is Literal:
        return value in get_args(typ)
    if origin is Union or type(typ).__name__ == "UnionType":
        return any(_admits_text(t, value) for t in get_args(typ))
    return False


def _element_type(typ: Any) -> Any:
    origin = get_origin(typ)
    if origin is tuple:
        return get_args(typ)[0]
    if origin is Union or type(typ).__name__ == "UnionType":
        for t in get_args(typ):
            if get_origin(t) is tuple:
                return get_args(t)[0]
    return Any


def typed(value: Any, typ: Any, env: Mapping[str, Any], loc: Loc, what: str) -> Any:
    """Resolve `value` for a hyperparameter of type `typ`."""
    if isinstance(value, str) and _admits_text(typ, value):
        return value
    if isinstance(value, list):
        inner = _element_type(typ)
        return [typed(v, inner, env, loc, what) for v in value]
    return evaluate(value, env, loc, what)


def hints(cls: type) -> dict[str, Any]:
    return cls.types()


def evaluate_variables(raw: Mapping[str, Any], locs: Mapping[str, Loc], base: Mapping[str, Any],
                       overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate `raw` variables in dependency order, on top of `base`; `overrides` win."""
    for name in raw:
        if not name_ok(name):
            check_name(name, "variable name", locs.get(name))
        if not name.isascii():
            try:
                expr.folded_name(name)
            except ExprError as exc:
                raise SpecError(f"variable '{name}': {exc.message}", loc=locs.get(name), hint=exc.hint) from None
        if name in expr.CONSTANTS:
            raise SpecError(f"variable '{name}': '{name}' is a constant of expressions "
                            f"({expr.CONSTANTS[name]!r})", loc=locs.get(name), hint="name the variable otherwise")
    env = dict(base)
    pending = {k: v for k, v in raw.items() if k not in overrides}
    env.update(overrides)
    deps = {}
    for k, v in pending.items():
        try:
            deps[k] = _names(v) & set(pending)
        except ExprError as exc:
            exc.message = f"variable '{k}': {exc.message}"
            raise exc.with_context(loc=locs.get(k))
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in env:
            return
        if name in visiting:
            cycle = " -> ".join(visiting[visiting.index(name):] + [name])
            raise SpecError(f"variables depend on each other in a cycle: {cycle}", loc=locs.get(name),
                            hint="define one of them as a number")
        visiting.append(name)
        for dep in sorted(deps[name]):
            visit(dep)
        visiting.pop()
        env[name] = evaluate(pending[name], env, locs.get(name, Loc()), f"variable '{name}'")

    for name in pending:
        try:
            visit(name)
        except ExprError as exc:
            raise exc.with_context(loc=locs.get(name))
        except RecursionError:
            raise SpecError("variables depend on each other in a chain too long to follow",
                            loc=locs.get(name), hint="define some of them as numbers") from None
    return env


def _names(value: Any) -> set[str]:
    """The variables an expression (or a list of them) names."""
    if isinstance(value, str):
        return expr.names(value)
    if isinstance(value, list):
        return set().union(*(_names(v) for v in value)) if value else set()
    return set()


def check_keys(mapping: Mapping[str, Any], allowed: set[str] | list[str], what: str, key_loc) -> None:
    """Unknown keys are errors with a did-you-mean."""
    for key in mapping:
        if key not in allowed:
            hint = did_you_mean(key, allowed)
            raise SpecError(f"unknown key '{key}' in {what}", loc=key_loc(key),
                            hint=hint or f"allowed keys: {', '.join(sorted(allowed))}")


def loc_of(mapping: Any, key: str | None = None) -> Loc:
    if isinstance(mapping, LocDict):
        return mapping.key_loc(key) if key else mapping.loc
    return getattr(mapping, "loc", Loc())


def expect_mapping(value: Any, parent: Any, key: str) -> None:
    if not isinstance(value, dict):
        raise SpecError(f"'{key}' must be a mapping of names to values", loc=loc_of(parent, key),
                        hint=Fallback('write it as a mapping: {name: value}'))
    for name in value:
        if not name.isidentifier():
            raise SpecError(f"'{name}' under '{key}' is not a name (letters, digits and _)",
                            loc=loc_of(value, name), hint="a name starts with a letter or '_', then letters, "
                                                          "digits and '_'")
