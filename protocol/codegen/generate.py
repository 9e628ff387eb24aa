#!/usr/bin/env python3
"""Generates the Kafka message code from protocol/kafka/schema/*.schema.

Usage: generate.py --out DIR [--tests FILE] SCHEMA...

For every API it writes DIR/protocol/kafka/messages/<api>.h and .cc (a request and a response
struct with encode/decode/print for every version), plus DIR/protocol/kafka/api_table.h/.cc
(the api_key enum and the version table) and, with --tests, a GoogleTest file with round-trip
tests for every API and version. The format is described in protocol/kafka/schema/README.md.
Only the Python standard library is used.
"""
import argparse
import os
import re
import sys

PRIMITIVES = {
    # name: (C++ type, reader call, writer call, min classic size, min compact size)
    "bool": ("bool", "r.boolean()", "w.boolean({v})", 1, 1),
    "int8": ("std::int8_t", "r.i8()", "w.i8({v})", 1, 1),
    "int16": ("std::int16_t", "r.i16()", "w.i16({v})", 2, 2),
    "uint16": ("std::uint16_t", "r.u16()", "w.u16({v})", 2, 2),
    "int32": ("std::int32_t", "r.i32()", "w.i32({v})", 4, 4),
    "uint32": ("std::uint32_t", "r.u32()", "w.u32({v})", 4, 4),
    "int64": ("std::int64_t", "r.i64()", "w.i64({v})", 8, 8),
    "float64": ("double", "r.f64()", "w.f64({v})", 8, 8),
    "uuid": ("::sluice::uuid", "r.read_uuid()", "w.write_uuid({v})", 16, 16),
    "string": ("std::string", None, None, 2, 1),
    "bytes": ("::sluice::protocol::kafka::bytes", None, None, 4, 1),
    "records": ("::sluice::protocol::kafka::records", None, None, 4, 1),
}

STRONG = {
    # as=name: (C++ type, allowed storage types, to-storage expression, from-storage expression)
    "partition_id": ("::sluice::partition_id", {"int32"}, "{v}.value", "::sluice::partition_id({e})"),
    "node_id": ("::sluice::node_id", {"int32"}, "{v}.value", "::sluice::node_id({e})"),
    "offset": ("::sluice::offset", {"int64"}, "{v}.value", "::sluice::offset({e})"),
    "producer_id": ("::sluice::producer_id", {"int64"}, "{v}.value", "::sluice::producer_id({e})"),
    "producer_epoch": ("::sluice::producer_epoch", {"int16"}, "{v}.value",
                       "::sluice::producer_epoch({e})"),
    "error_code": ("::sluice::protocol::kafka::error_code", {"int16"},
                   "static_cast<std::int16_t>({v})",
                   "static_cast<::sluice::protocol::kafka::error_code>({e})"),
    "api_key": ("::sluice::protocol::kafka::api_key", {"int16"}, "static_cast<std::int16_t>({v})",
                "static_cast<::sluice::protocol::kafka::api_key>({e})"),
    "ms": ("std::chrono::milliseconds", {"int32", "int64"}, "static_cast<{storage}>({v}.count())",
           "std::chrono::milliseconds({e})"),
}

CXX_KEYWORDS = {"default", "delete", "new", "class", "struct", "int", "long", "short", "char",
                "operator", "private", "public", "protected", "namespace", "template", "this",
                "throw", "try", "catch", "union", "register", "auto", "bool", "true", "false"}


class SchemaError(Exception):
    pass


class Versions:
    """An inclusive version range; hi None means open ended (up to the API's maximum)."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    @staticmethod
    def parse(text, where):
        m = re.fullmatch(r"v(\d+)(\+|-(\d+))?", text)
        if not m:
            raise SchemaError(f"{where}: bad version range '{text}'")
        lo = int(m.group(1))
        if m.group(2) == "+":
            return Versions(lo, None)
        if m.group(3) is not None:
            return Versions(lo, int(m.group(3)))
        return Versions(lo, lo)

    def contains(self, v):
        return v >= self.lo and (self.hi is None or v <= self.hi)

    def clamp(self, lo, hi):
        a = max(self.lo, lo)
        b = hi if self.hi is None else min(self.hi, hi)
        return (a, b) if a <= b else None

    def cond(self, var, api_lo, api_hi):
        """A C++ condition true for versions in range, given the API's own range."""
        r = self.clamp(api_lo, api_hi)
        if r is None:
            return "false"
        a, b = r
        parts = []
        if a > api_lo:
            parts.append(f"{var} >= {a}")
        if b < api_hi:
            parts.append(f"{var} <= {b}")
        return " && ".join(parts) if parts else "true"


class Field:
    def __init__(self, name, type_text, where):
        self.name = name
        self.type_text = type_text
        self.where = where
        self.versions = None
        self.nullable = None  # Versions or None
        self.tag = None
        self.default = None
        self.as_type = None
        self.sensitive = False
        self.children = []  # inline struct definition
        self.is_array = type_text.startswith("[")
        self.elem = type_text[1:-1] if self.is_array else type_text
        if self.is_array and not type_text.endswith("]"):
            raise SchemaError(f"{where}: bad array type '{type_text}'")
        self.struct = None  # resolved Struct for struct-typed fields
        self.top_level = False  # a field of the request or response struct itself

    @property
    def is_struct(self):
        return self.elem not in PRIMITIVES


class Struct:
    def __init__(self, name, fields, where):
        self.name = name
        self.fields = fields
        self.where = where


class Message:
    def __init__(self, kind, fields):
        self.kind = kind
        self.fields = fields


class Api:
    def __init__(self, name, key, lo, hi, flex, path):
        self.name, self.key, self.lo, self.hi, self.flex, self.path = name, key, lo, hi, flex, path
        self.messages = {}
        self.shared = {}  # top-level struct blocks

    def flexible(self, v):
        return self.flex is not None and v >= self.flex


def strip_comment(line):
    out, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).rstrip()


def parse_field(tokens, where):
    if len(tokens) < 2:
        raise SchemaError(f"{where}: a field needs a name and a type")
    f = Field(tokens[0], tokens[1], where)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", f.name):
        raise SchemaError(f"{where}: field name '{f.name}' is not snake_case")
    for tok in tokens[2:]:
        if tok.startswith("v") and re.fullmatch(r"v\d+(\+|-\d+)?", tok):
            f.versions = Versions.parse(tok, where)
        elif tok == "nullable":
            f.nullable = Versions(0, None)
        elif tok.startswith("nullable="):
            f.nullable = Versions.parse(tok.split("=", 1)[1], where)
        elif tok.startswith("tag="):
            f.tag = int(tok.split("=", 1)[1])
        elif tok.startswith("default="):
            f.default = tok.split("=", 1)[1]
        elif tok.startswith("as="):
            f.as_type = tok.split("=", 1)[1]
            if f.as_type not in STRONG:
                raise SchemaError(f"{where}: unknown as= type '{f.as_type}'")
        elif tok == "sensitive":
            f.sensitive = True
        else:
            raise SchemaError(f"{where}: unknown modifier '{tok}'")
    if f.as_type is None and f.name == "error_code" and f.elem == "int16":
        f.as_type = "error_code"
    if f.as_type and STRONG[f.as_type][1] and f.elem not in STRONG[f.as_type][1]:
        raise SchemaError(f"{where}: as={f.as_type} does not fit type {f.elem}")
    if f.versions is None:
        f.versions = Versions(0, None)
    return f


def tokenize(text):
    """Splits on spaces but keeps quoted default values together."""
    return re.findall(r'(?:[^\s"]+(?:"[^"]*")?)+|"[^"]*"', text)


def parse_file(path):
    lines = []
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            line = strip_comment(raw)
            if line.strip():
                if "\t" in line:
                    raise SchemaError(f"{path}:{n}: tabs are not allowed")
                indent = len(line) - len(line.lstrip(" "))
                lines.append((n, indent, tokenize(line.strip())))
    if not lines or lines[0][2][0] != "api":
        raise SchemaError(f"{path}: the first line must be the api line")
    n, _, t = lines[0]
    m = re.fullmatch(r"api (\w+) key (\d+) versions (\d+)-(\d+) flexible (\d+\+|none)", " ".join(t))
    if not m:
        raise SchemaError(f"{path}:{n}: bad api line")
    flex = None if m.group(5) == "none" else int(m.group(5)[:-1])
    api = Api(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), flex, path)
    if os.path.splitext(os.path.basename(path))[0] != api.name:
        raise SchemaError(f"{path}:{n}: the api name must equal the file name")

    pos = 1

    def parse_block(indent):
        nonlocal pos
        fields = []
        while pos < len(lines):
            ln, ind, toks = lines[pos]
            if ind < indent:
                break
            if ind > indent:
                raise SchemaError(f"{path}:{ln}: unexpected indentation")
            pos += 1
            f = parse_field(toks, f"{path}:{ln}")
            if pos < len(lines) and lines[pos][1] > indent:
                f.children = parse_block(lines[pos][1])
            fields.append(f)
        return fields

    while pos < len(lines):
        ln, ind, toks = lines[pos]
        if ind != 0:
            raise SchemaError(f"{path}:{ln}: expected request, response or struct")
        pos += 1
        body_indent = lines[pos][1] if pos < len(lines) else 2
        if toks == ["request"] or toks == ["response"]:
            api.messages[toks[0]] = Message(toks[0], parse_block(body_indent) if body_indent > 0 else [])
            for f in api.messages[toks[0]].fields:
                f.top_level = True
        elif toks[0] == "struct" and len(toks) == 2:
            api.shared[toks[1]] = Struct(toks[1], parse_block(body_indent), f"{path}:{ln}")
        else:
            raise SchemaError(f"{path}:{ln}: expected request, response or struct")
    for kind in ("request", "response"):
        if kind not in api.messages:
            raise SchemaError(f"{path}: missing {kind}")
    return api


def resolve(api):
    """Links struct-typed fields to their Struct and checks the rules of the format."""
    structs = dict(api.shared)
    for s in api.shared.values():
        resolve_fields(api, s.fields, structs, s.name)
    for msg in api.messages.values():
        resolve_fields(api, msg.fields, structs, f"{api.name}_{msg.kind}")
    return structs


def resolve_fields(api, fields, structs, owner):
    names = set()
    tags = []
    for f in fields:
        if f.name in names:
            raise SchemaError(f"{f.where}: duplicate field '{f.name}'")
        names.add(f.name)
        if f.tag is not None:
            if api.flex is None:
                raise SchemaError(f"{f.where}: tagged field in an API without flexible versions")
            tags.append(f.tag)
        if f.is_struct:
            if f.children:
                if f.elem in structs:
                    raise SchemaError(f"{f.where}: struct '{f.elem}' defined twice")
                structs[f.elem] = Struct(f.elem, f.children, f.where)
                resolve_fields(api, f.children, structs, f.elem)
            elif f.elem not in structs:
                raise SchemaError(f"{f.where}: unknown type '{f.elem}'")
            f.struct = structs[f.elem]
            if f.as_type:
                raise SchemaError(f"{f.where}: as= on a struct")
        elif f.children:
            raise SchemaError(f"{f.where}: a primitive field cannot have nested fields")
    if tags != sorted(tags) or len(tags) != len(set(tags)):
        raise SchemaError(f"{owner}: tags must be unique and ascending")
    for f in fields:
        if f.is_struct and f.elem in names:
            raise SchemaError(f"{f.where}: struct name '{f.elem}' equals a field name of {owner}")


# --- C++ emission ----------------------------------------------------------------------------

def elem_cxx(f):
    if f.is_struct:
        return f.elem
    if f.as_type:
        return STRONG[f.as_type][0]
    return PRIMITIVES[f.elem][0]


def field_cxx(f):
    e = elem_cxx(f)
    nullable = f.nullable is not None
    if f.is_array:
        t = f"std::vector<{e}>"
        return f"std::optional<{t}>" if nullable else t
    if f.elem == "records":
        return e
    if nullable and (f.elem in ("string", "bytes") or f.is_struct):
        return f"std::optional<{e}>"
    return e


def cxx_literal(f, text):
    """The C++ expression for a default value written in the schema."""
    if text == "null":
        if f.nullable is None and f.elem != "records":
            raise SchemaError(f"{f.where}: default=null on a field that is not nullable")
        return "std::nullopt" if f.elem != "records" else "{}"
    if f.is_array or f.is_struct:
        raise SchemaError(f"{f.where}: only null can be the default of an array or struct")
    if f.elem == "bool":
        if text not in ("true", "false"):
            raise SchemaError(f"{f.where}: bad bool default '{text}'")
        return text
    if f.elem == "string":
        if not (text.startswith('"') and text.endswith('"')):
            raise SchemaError(f"{f.where}: a string default must be quoted")
        return f"std::string({text})"
    if f.elem in ("int8", "int16", "uint16", "int32", "uint32", "int64", "float64"):
        base = PRIMITIVES[f.elem][0]
        lit = f"static_cast<{base}>({text}LL)" if f.elem == "int64" and text.startswith("-") else \
            f"static_cast<{base}>({text})"
        if f.as_type:
            return STRONG[f.as_type][3].format(e=lit)
        return lit
    raise SchemaError(f"{f.where}: default not supported for type {f.elem}")


def default_expr(f):
    if f.default is not None:
        return cxx_literal(f, f.default)
    if f.elem == "records" and not f.is_array:
        # compat: Kafka's brokers always set a records field (MemoryRecords.EMPTY on every error
        # path of FetchResponse); librdkafka cannot parse a null one ("invalid MessageSetSize -1").
        return "::sluice::protocol::kafka::records::empty()"
    if field_cxx(f).startswith("std::optional<"):
        return "std::in_place"  # like Kafka: empty, not null, unless default=null
    return "{}"


def read_scalar(f):
    base = PRIMITIVES[f.elem][1]
    if f.as_type:
        return STRONG[f.as_type][3].format(e=base)
    return base


def write_scalar(f, v):
    if f.as_type:
        v = STRONG[f.as_type][2].format(v=v, storage=PRIMITIVES[f.elem][0])
    return PRIMITIVES[f.elem][2].format(v=v)


class Emitter:
    def __init__(self, api):
        self.api = api

    def nullable_cond(self, f):
        return f.nullable.cond("version", self.api.lo, self.api.hi) if f.nullable else "false"

    # Reading one value (not an array) into `target`; `f` describes the element.
    def read_elem(self, f, target, out, ind, nullable_now):
        p = " " * ind
        if f.is_struct:
            if f.nullable is not None and not f.is_array:
                # Nullable single struct: a leading int8 marker (-1 = null, 1 = present).
                out.append(f"{p}if (r.i8() < 0) {{")
                out.append(f"{p}    if ({nullable_now}) {{ {target}.reset(); }} else {{ r.fail(errc::invalid_length); }}")
                out.append(f"{p}}} else {{")
                # Not emplace(): clang 14 caches "not default-constructible" for a nested struct
                # seen while its enclosing struct was incomplete.
                out.append(f"{p}    {target} = std::decay_t<decltype({target})>::value_type{{}};")
                out.append(f"{p}    {target}->decode(r, version);")
                out.append(f"{p}}}")
            else:
                out.append(f"{p}{target}.decode(r, version);")
            return
        if f.elem == "string":
            if f.nullable is not None and not f.is_array:
                out.append(f"{p}if ({nullable_now}) {{ {target} = r.nullable_string(flex); }} "
                           f"else {{ {target} = r.string(flex); }}")
            elif f.is_array and f.nullable is not None:
                out.append(f"{p}{target} = r.string(flex);")
            else:
                out.append(f"{p}{target} = r.string(flex);")
            return
        if f.elem == "bytes":
            if f.nullable is not None and not f.is_array:
                out.append(f"{p}if ({nullable_now}) {{ codec::read_nullable_bytes(r, flex, {target}); }} "
                           f"else {{ {target}.emplace(); codec::read_bytes(r, flex, *{target}); }}")
            else:
                out.append(f"{p}codec::read_bytes(r, flex, {target});")
            return
        if f.elem == "records":
            out.append(f"{p}codec::read_records(r, flex, {target});")
            if f.nullable is not None:
                out.append(f"{p}if ({target}.is_null() && !({nullable_now})) {{ r.fail(errc::invalid_length); }}")
            else:
                out.append(f"{p}if ({target}.is_null()) {{ r.fail(errc::invalid_length); }}")
            return
        out.append(f"{p}{target} = {read_scalar(f)};")

    def min_size(self, f, flex_text):
        if f.is_struct:
            return "1"
        classic, compact = PRIMITIVES[f.elem][3], PRIMITIVES[f.elem][4]
        if classic == compact:
            return str(classic)
        return f"({flex_text} ? {compact} : {classic})"

    def read_field(self, f, out, ind, target):
        p = " " * ind
        nullable_now = self.nullable_cond(f)
        if not f.is_array:
            self.read_elem(f, target, out, ind, nullable_now)
            return
        out.append(f"{p}{{")
        out.append(f"{p}    const std::int64_t n = r.array_length(flex, {self.min_size(f, 'flex')});")
        out.append(f"{p}    if (n < 0) {{")
        if f.nullable is not None:
            out.append(f"{p}        if (r.ok() && !({nullable_now})) {{ r.fail(errc::invalid_length); }}")
            out.append(f"{p}        {target}.reset();")
        else:
            out.append(f"{p}        if (r.ok()) {{ r.fail(errc::invalid_length); }}")
        out.append(f"{p}    }} else {{")
        vec = f"{target}.emplace()" if f.nullable is not None else target
        out.append(f"{p}        auto& v = {vec};")
        out.append(f"{p}        v.clear();")
        out.append(f"{p}        v.reserve(static_cast<std::size_t>(std::min<std::int64_t>(n, 1024)));")
        out.append(f"{p}        for (std::int64_t i = 0; i < n && r.ok(); ++i) {{")
        out.append(f"{p}            auto& e = v.emplace_back();")
        inner = []
        elem_field = Field(f.name, f.elem, f.where)
        elem_field.as_type, elem_field.struct = f.as_type, f.struct
        self.read_elem(elem_field, "e", inner, ind + 12, "false")
        out.extend(inner)
        out.append(f"{p}        }}")
        out.append(f"{p}    }}")
        out.append(f"{p}}}")

    def write_elem(self, f, v, out, ind, nullable_now):
        p = " " * ind
        if f.is_struct:
            if f.nullable is not None and not f.is_array:
                out.append(f"{p}if (!{v}) {{ w.i8(-1); }} else {{ w.i8(1); {v}->encode(w, version); }}")
            else:
                out.append(f"{p}{v}.encode(w, version);")
            return
        if f.elem == "string":
            if f.nullable is not None and not f.is_array:
                out.append(f"{p}if ({nullable_now}) {{ w.nullable_string({v}, flex); }} "
                           f"else {{ w.string({v} ? std::string_view(*{v}) : std::string_view(), flex); }}")
            else:
                out.append(f"{p}w.string({v}, flex);")
            return
        if f.elem == "bytes":
            if f.nullable is not None and not f.is_array:
                out.append(f"{p}if ({nullable_now} || {v}) {{ codec::write_nullable_bytes(w, flex, {v}); }} "
                           f"else {{ codec::write_bytes(w, flex, {{}}); }}")
            else:
                out.append(f"{p}codec::write_bytes(w, flex, {v});")
            return
        if f.elem == "records":
            # Null only where the version allows it; elsewhere a null records is written empty.
            out.append(f"{p}codec::write_records(w, flex, {v}, {nullable_now});")
            return
        out.append(f"{p}{write_scalar(f, v)};")

    def write_field(self, f, out, ind, v):
        p = " " * ind
        nullable_now = self.nullable_cond(f)
        if not f.is_array:
            self.write_elem(f, v, out, ind, nullable_now)
            return
        if f.nullable is not None:
            out.append(f"{p}if (!{v}) {{")
            out.append(f"{p}    w.array_length(({nullable_now}) ? -1 : 0, flex);")
            out.append(f"{p}}} else {{")
            vec, ind2 = f"(*{v})", ind + 4
        else:
            vec, ind2 = v, ind
        q = " " * ind2
        out.append(f"{q}w.array_length(static_cast<std::int64_t>({vec}.size()), flex);")
        out.append(f"{q}for (const auto& e : {vec}) {{")
        elem_field = Field(f.name, f.elem, f.where)
        elem_field.as_type, elem_field.struct = f.as_type, f.struct
        self.write_elem(elem_field, "e", out, ind2 + 4, "false")
        out.append(f"{q}}}")
        if f.nullable is not None:
            out.append(f"{p}}}")

    def struct_body(self, name, fields, is_message, kind=None):
        """Declarations (header) and definitions (source) for one struct."""
        api = self.api
        decl = []
        for f in fields:
            if f.is_struct and f.children:
                pass  # nested structs are declared before use by the caller (emit order)
        for f in fields:
            attrs = " // sensitive" if f.sensitive else ""
            init = default_expr(f)
            decl.append(f"    {field_cxx(f)} {member_name(f)}{{{init if init != '{}' else ''}}};{attrs}")
        decl.append("    ::sluice::protocol::kafka::tagged_fields unknown_tagged_fields;")
        if kind == "request":
            decl.append("    /// Bytes after the body. Kafka ignores them (AbstractRequest.parseRequest); kept so that")
            decl.append("    /// a frame re-encodes unchanged. compat: librdkafka's all-topics Metadata v9+ request")
            decl.append("    /// leaves 3 bytes of a 4-byte array-count placeholder (rd_kafka_MetadataRequest0).")
            decl.append("    ::sluice::protocol::kafka::bytes trailing_bytes;")
        decl.append("")
        decl.append("    void encode(::sluice::protocol::writer& w, std::int16_t version) const;")
        decl.append("    void decode(::sluice::protocol::reader& r, std::int16_t version);")
        decl.append("    void print(std::ostream& os) const;")
        decl.append(f"    bool operator==(const {name}&) const = default;")

        qual = name if not is_message else name
        src = []
        # decode
        src.append(f"void {self.qual(qual)}::decode(reader& r, std::int16_t version) {{")
        src.append(f"    [[maybe_unused]] const bool flex = {self.flex_cond()};")
        src.append("    (void)version;  // unused when no field depends on the version")
        for f in fields:
            if f.tag is not None:
                continue
            cond = f.versions.cond("version", api.lo, api.hi)
            if cond == "false":
                continue
            if cond == "true":
                self.read_field(f, src, 4, member_name(f))
            else:
                src.append(f"    if ({cond}) {{")
                self.read_field(f, src, 8, member_name(f))
                src.append("    }")
        if api.flex is not None:
            src.append("    if (flex) {")
            src.append("        const std::uint32_t tags = codec::read_tag_count(r);")
            src.append("        std::uint32_t last_tag = 0;  // tags must be strictly ascending")
            src.append("        for (std::uint32_t t = 0; t < tags && r.ok(); ++t) {")
            src.append("            const std::uint32_t tag = r.uvarint();")
            src.append("            if (t > 0 && tag <= last_tag) { r.fail(errc::invalid_value); break; }")
            src.append("            last_tag = tag;")
            src.append("            const std::uint32_t size = r.uvarint();")
            src.append("            const bytes_view body = r.take(size);")
            src.append("            if (!r.ok()) { break; }")
            tagged = [f for f in fields if f.tag is not None]
            if tagged:
                src.append("            reader tr(body, r.owner());")
                src.append("            bool known = false;")
                src.append("            switch (tag) {")
                for f in tagged:
                    cond = f.versions.cond("version", api.lo, api.hi)
                    src.append(f"                case {f.tag}:")
                    src.append(f"                    if ({cond}) {{")
                    src.append("                        known = true;")
                    src.append("                        [&](reader& r) {")
                    self.read_field(f, src, 28, member_name(f))
                    src.append("                        }(tr);")
                    src.append("                        if (!tr.ok()) { r.fail(errc::invalid_value); }")
                    src.append("                    }")
                    src.append("                    break;")
                src.append("                default: break;")
                src.append("            }")
                src.append("            if (!known) {")
            else:
                src.append("            {")
            src.append("                unknown_tagged_fields.push_back({tag, bytes(body.begin(), body.end())});")
            src.append("            }")
            src.append("        }")
            src.append("    }")
        if kind == "request":
            src.append("    if (r.ok() && r.remaining() > 0) {")
            src.append("        const bytes_view rest = r.take(r.remaining());")
            src.append("        trailing_bytes.assign(rest.begin(), rest.end());")
            src.append("    }")
        src.append("}")
        src.append("")
        # encode
        src.append(f"void {self.qual(qual)}::encode(writer& w, std::int16_t version) const {{")
        src.append(f"    [[maybe_unused]] const bool flex = {self.flex_cond()};")
        src.append("    (void)version;  // unused when no field depends on the version")
        for f in fields:
            if f.tag is not None:
                continue
            cond = f.versions.cond("version", api.lo, api.hi)
            if cond == "false":
                continue
            if cond == "true":
                self.write_field(f, src, 4, member_name(f))
            else:
                src.append(f"    if ({cond}) {{")
                self.write_field(f, src, 8, member_name(f))
                src.append("    }")
        if api.flex is not None:
            src.append("    if (flex) {")
            tagged = [f for f in fields if f.tag is not None]
            src.append("        std::vector<codec::pending_tag> known;")
            for f in tagged:
                cond = f.versions.cond("version", api.lo, api.hi)
                src.append(f"        if (({cond}) && !({member_name(f)} == {self.typed_default(f)})) {{")
                src.append("            writer tw;")
                src.append("            [&](writer& w) {")
                self.write_field(f, src, 16, member_name(f))
                src.append("            }(tw);")
                src.append(f"            known.push_back({{{f.tag}, std::move(tw.buffer())}});")
                src.append("        }")
            src.append("        codec::write_tag_section(w, known, unknown_tagged_fields);")
            src.append("    }")
        if kind == "request":
            src.append("    w.raw(bytes_view(trailing_bytes.data(), trailing_bytes.size()));")
        src.append("}")
        src.append("")
        # print
        src.append(f"void {self.qual(qual)}::print(std::ostream& os) const {{")
        src.append("    os << '{';")
        first = True
        for f in fields:
            sep = "" if first else ", "
            first = False
            if f.sensitive:
                src.append(f'    os << "{sep}{f.name}=<redacted>";')
            else:
                src.append(f'    os << "{sep}{f.name}=";')
                src.append(f"    codec::print(os, {member_name(f)});")
        src.append("    os << '}';")
        src.append("}")
        src.append("")
        return decl, src

    def typed_default(self, f):
        d = default_expr(f)
        if d == "{}":
            return f"{field_cxx(f)}{{}}"
        if d in ("std::nullopt", "std::in_place"):
            return f"{field_cxx(f)}{{{d}}}"
        return f"{field_cxx(f)}({d})"

    def flex_cond(self):
        if self.api.flex is None:
            return "false"
        if self.api.flex <= self.api.lo:
            return "true"
        return f"version >= {self.api.flex}"

    def qual(self, name):
        return self.scope.get(name, name)


def safe(name):
    return name + "_" if name in CXX_KEYWORDS else name


# Static members every message struct declares; a top-level field with one of these names
# (FindCoordinator's `key`) gets a trailing underscore instead.
MESSAGE_MEMBERS = {"key", "min_version", "max_version", "first_flexible_version", "is_flexible"}


def member_name(f):
    """The C++ member name of a field."""
    if f.top_level and f.name in MESSAGE_MEMBERS:
        return f.name + "_"
    return safe(f.name)


def struct_order(fields, seen, order):
    """Nested structs in dependency order (innermost first), each once."""
    for f in fields:
        if f.is_struct and f.struct and f.struct.name not in seen:
            seen.add(f.struct.name)
            struct_order(f.struct.fields, seen, order)
            order.append(f.struct)


def emit_api(api, outdir):
    resolve(api)
    em = Emitter(api)
    hdr, src = [], []
    guard_name = api.name
    hdr.append(f"// Generated from {os.path.basename(api.path)} by protocol/codegen/generate.py. Do not edit.")
    hdr.append("#pragma once")
    hdr.append("")
    hdr.append("#include <chrono>")
    hdr.append("#include <cstdint>")
    hdr.append("#include <optional>")
    hdr.append("#include <ostream>")
    hdr.append("#include <string>")
    hdr.append("#include <vector>")
    hdr.append("")
    hdr.append('#include "protocol/kafka/api_table.h"')
    hdr.append('#include "protocol/kafka/codec.h"')
    hdr.append("")
    hdr.append("namespace sluice::protocol::kafka {")
    hdr.append("")
    src.append(f"// Generated from {os.path.basename(api.path)} by protocol/codegen/generate.py. Do not edit.")
    src.append(f'#include "protocol/kafka/messages/{api.name}.h"')
    src.append("")
    src.append("#include <algorithm>")
    src.append("")
    src.append("namespace sluice::protocol::kafka {")
    src.append("")

    # Shared structs live at namespace scope, prefixed by nothing: their names must be unique.
    shared_seen = set()
    shared_order = []
    for s in api.shared.values():
        if s.name not in shared_seen:
            shared_seen.add(s.name)
            struct_order(s.fields, shared_seen, shared_order)
            shared_order.append(s)
    em.scope = {}
    for s in shared_order:
        em.scope[s.name] = s.name
    for s in shared_order:
        decl, body = em.struct_body(s.name, s.fields, False)
        hdr.append(f"struct {s.name} {{")
        hdr.extend(decl)
        hdr.append("};")
        hdr.append("")
        src.extend(body)

    for kind in ("request", "response"):
        msg = api.messages[kind]
        mname = f"{api.name}_{kind}"
        order = []
        struct_order(msg.fields, set(shared_seen), order)
        em.scope = {s.name: s.name for s in shared_order}
        for s in order:
            em.scope[s.name] = f"{mname}::{s.name}"
        hdr.append(f"struct {mname} {{")
        hdr.append(f"    static constexpr api_key key = api_key::{api.name};")
        hdr.append(f"    static constexpr std::int16_t min_version = {api.lo};")
        hdr.append(f"    static constexpr std::int16_t max_version = {api.hi};")
        flex = api.flex if api.flex is not None else -1
        hdr.append(f"    /// First flexible version, or -1 when no version is flexible.")
        hdr.append(f"    static constexpr std::int16_t first_flexible_version = {flex};")
        hdr.append("    static constexpr bool is_flexible(std::int16_t v) {")
        hdr.append("        return first_flexible_version >= 0 && v >= first_flexible_version;")
        hdr.append("    }")
        hdr.append("")
        for s in order:
            decl, body = em.struct_body(s.name, s.fields, False)
            hdr.append(f"    struct {s.name} {{")
            hdr.extend("    " + d if d else d for d in decl)
            hdr.append("    };")
            hdr.append("")
            src.extend(body)
        em.scope[mname] = mname
        decl, body = em.struct_body(mname, msg.fields, True, kind)
        hdr.extend(decl)
        hdr.append("};")
        hdr.append("")
        hdr.append(f"inline std::ostream& operator<<(std::ostream& os, const {mname}& m) {{")
        hdr.append("    m.print(os);")
        hdr.append("    return os;")
        hdr.append("}")
        hdr.append("")
        src.extend(body)

    hdr.append("}  // namespace sluice::protocol::kafka")
    src.append("}  // namespace sluice::protocol::kafka")
    d = os.path.join(outdir, "protocol", "kafka", "messages")
    os.makedirs(d, exist_ok=True)
    write_if_changed(os.path.join(d, f"{api.name}.h"), "\n".join(hdr) + "\n")
    write_if_changed(os.path.join(d, f"{api.name}.cc"), "\n".join(src) + "\n")


def write_if_changed(path, text):
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def kafka_name(snake):
    return "".join(p.capitalize() for p in snake.split("_"))


def emit_table(apis, outdir):
    apis = sorted(apis, key=lambda a: a.key)
    h = ["// Generated by protocol/codegen/generate.py from protocol/kafka/schema/. Do not edit.",
         "// The API keys and version ranges the codec implements.",
         "#pragma once", "", "#include <cstdint>", "#include <ostream>", "#include <span>",
         "#include <string_view>", "", "namespace sluice::protocol::kafka {", "",
         "enum class api_key : std::int16_t {"]
    for a in apis:
        h.append(f"    {a.name} = {a.key},")
    h += ["};", "",
          "struct api_info {",
          "    api_key key;",
          "    std::string_view name;  // Kafka's name, e.g. \"OffsetCommit\"",
          "    std::int16_t min_version;",
          "    std::int16_t max_version;",
          "    std::int16_t first_flexible_version;  // -1: none",
          "",
          "    bool supports(std::int16_t v) const { return v >= min_version && v <= max_version; }",
          "    bool is_flexible(std::int16_t v) const {",
          "        return first_flexible_version >= 0 && v >= first_flexible_version;",
          "    }",
          "    /// Request header version: 2 for flexible versions, else 1.",
          "    int request_header_version(std::int16_t v) const { return is_flexible(v) ? 2 : 1; }",
          "    /// Response header version: 1 for flexible versions, else 0; ApiVersions is always 0.",
          "    int response_header_version(std::int16_t v) const {",
          "        return key != api_key::api_versions && is_flexible(v) ? 1 : 0;",
          "    }",
          "};", "",
          "/// Every API the codec knows, ascending by key.",
          "std::span<const api_info> all_apis() noexcept;",
          "/// The API with this key, or nullptr.",
          "const api_info* find_api(std::int16_t key) noexcept;",
          "inline const api_info* find_api(api_key key) noexcept {",
          "    return find_api(static_cast<std::int16_t>(key));",
          "}",
          "std::string_view api_name(api_key key) noexcept;", "",
          "namespace codec {",
          "inline void print(std::ostream& os, api_key k) { os << api_name(k); }",
          "}  // namespace codec", "",
          "}  // namespace sluice::protocol::kafka", ""]
    c = ["// Generated by protocol/codegen/generate.py. Do not edit.",
         '#include "protocol/kafka/api_table.h"', "", "#include <array>", "",
         "namespace sluice::protocol::kafka {", "namespace {", "",
         f"constexpr std::array<api_info, {len(apis)}> table{{{{"]
    for a in apis:
        flex = a.flex if a.flex is not None else -1
        c.append(f'    {{api_key::{a.name}, "{kafka_name(a.name)}", {a.lo}, {a.hi}, {flex}}},')
    c += ["}};", "", "}  // namespace", "",
          "std::span<const api_info> all_apis() noexcept { return table; }", "",
          "const api_info* find_api(std::int16_t key) noexcept {",
          "    for (const auto& a : table) {",
          "        if (static_cast<std::int16_t>(a.key) == key) {",
          "            return &a;",
          "        }",
          "    }",
          "    return nullptr;",
          "}", "",
          "std::string_view api_name(api_key key) noexcept {",
          "    const api_info* a = find_api(key);",
          "    return a ? a->name : std::string_view(\"Unknown\");",
          "}", "",
          "}  // namespace sluice::protocol::kafka", ""]
    d = os.path.join(outdir, "protocol", "kafka")
    os.makedirs(d, exist_ok=True)
    write_if_changed(os.path.join(d, "api_table.h"), "\n".join(h))
    write_if_changed(os.path.join(d, "api_table.cc"), "\n".join(c))
    am = ["// Generated by protocol/codegen/generate.py. Do not edit.", "#pragma once", "",
          "#include <cstdint>", ""]
    am += [f'#include "protocol/kafka/messages/{a.name}.h"' for a in apis]
    am += ["", "namespace sluice::protocol::kafka {", "",
           "/// Calls f.template operator()<Request, Response>() for the API with this key.",
           "/// Returns false (and calls nothing) for an unknown key.",
           "template <typename F>",
           "bool with_message_types(std::int16_t key, F&& f) {",
           "    switch (key) {"]
    for a in apis:
        am.append(f"        case {a.key}: f.template operator()<{a.name}_request, {a.name}_response>(); return true;")
    am += ["        default: return false;", "    }", "}", "",
           "}  // namespace sluice::protocol::kafka", ""]
    write_if_changed(os.path.join(d, "all_messages.h"), "\n".join(am))


# --- round-trip tests ------------------------------------------------------------------------

class SampleEmitter:
    """Writes fill functions that give every field present in a version a non-default value."""

    def __init__(self, api):
        self.api = api
        self.counter = 0

    def value(self, f, ind, target, out, depth):
        p = " " * ind
        self.counter += 1
        k = self.counter
        if f.is_struct:
            fill = f"fill_{self.api.name}_{f.struct.name}"
            out.append(f"{p}{fill}({target}, version, seed + {k});")
            return
        e = f.elem
        if e == "bool":
            out.append(f"{p}{target} = true;")
        elif e == "uuid":
            out.append(f"{p}{target}.bytes[0] = static_cast<std::uint8_t>(seed + {k}); {target}.bytes[15] = 7;")
        elif e == "string":
            out.append(f'{p}{target} = std::string(1, \'s\').append(std::to_string(seed + {k}));')
        elif e == "bytes":
            out.append(f"{p}{target} = bytes{{std::byte{{1}}, std::byte{{2}}, std::byte(seed + {k})}};")
        elif e == "records":
            out.append(f"{p}{{ const std::byte rb[] = {{std::byte{{9}}, std::byte(seed + {k}), std::byte{{3}}, std::byte{{4}}}};")
            out.append(f"{p}  {target} = records::copy_of(bytes_view(rb, sizeof rb)); }}")
        else:
            base = PRIMITIVES[e][0]
            lit = f"static_cast<{base}>(seed + {k} + 1)"
            if f.as_type:
                lit = STRONG[f.as_type][3].format(e=lit)
            out.append(f"{p}{target} = {lit};")

    def fill_fields(self, fields, out, depth):
        api = self.api
        for f in fields:
            cond = f.versions.cond("version", api.lo, api.hi)
            if cond == "false":
                continue
            out.append(f"    if ({cond}) {{")
            target = f"m.{member_name(f)}"
            if f.is_array:
                vec = f"{target}.emplace()" if f.nullable is not None else target
                out.append(f"        auto& v = {vec};")
                out.append("        for (int i = 0; i < 2; ++i) {")
                ef = Field(f.name, f.elem, f.where)
                ef.as_type, ef.struct = f.as_type, f.struct
                out.append("            auto& e = v.emplace_back();")
                self.value(ef, 12, "e", out, depth)
                out.append("        }")
            elif f.nullable is not None and (f.elem in ("string", "bytes") or f.is_struct):
                out.append(f"        {target} = std::decay_t<decltype({target})>::value_type{{}};")
                self.value(f, 8, f"*{target}", out, depth)
            else:
                self.value(f, 8, target, out, depth)
            out.append("    }")


class NullAuditEmitter:
    """Writes, per response struct, a skeleton builder (every array gets one element, as a
    handler that only fills in scalars leaves it) and a walker that lists the fields a decoded
    message holds as null although their default is not null. Kafka's own message classes
    default every field to empty except those its JSON definitions give "default": "null",
    which the schema mirrors with default=null; a null anywhere else is a value Kafka's
    brokers do not send (a null Fetch records field breaks librdkafka)."""

    def __init__(self, api):
        self.api = api

    def present(self, f):
        return f.versions.cond("version", self.api.lo, self.api.hi)

    def skeleton(self, fields, out):
        for f in fields:
            cond = self.present(f)
            if cond == "false" or not (f.is_array or f.is_struct):
                continue
            target = f"m.{member_name(f)}"
            if f.is_array:
                out.append(f"    if ({cond}) {{")
                if f.nullable is not None:
                    out.append(f"        if (!{target}) {{ {target}.emplace(); }}")
                    vec = f"(*{target})"
                else:
                    vec = target
                out.append(f"        auto& e = {vec}.emplace_back();")
                if f.is_struct:
                    out.append(f"        skeleton_{self.api.name}_{f.struct.name}(e, version);")
                else:
                    out.append("        (void)e;")
                out.append("    }")
            elif f.nullable is None:
                out.append(f"    if ({cond}) {{ skeleton_{self.api.name}_{f.struct.name}({target}, version); }}")

    def walk(self, fields, out):
        for f in fields:
            cond = self.present(f)
            if cond == "false":
                continue
            target = f"m.{member_name(f)}"
            name = f.name
            unexpected_null = f.default != "null"
            body = []
            if f.elem == "records" and not f.is_array:
                if unexpected_null:
                    body.append(f'if ({target}.is_null()) {{ out.push_back(path + "{name}"); }}')
            elif f.nullable is not None and (f.is_array or f.elem in ("string", "bytes") or f.is_struct):
                if unexpected_null:
                    body.append(f'if (!{target}) {{ out.push_back(path + "{name}"); }}')
                if f.is_struct:
                    walk = f"nulls_{self.api.name}_{f.struct.name}"
                    if f.is_array:
                        body.append(f"if ({target}) {{ for (const auto& e : *{target}) "
                                    f'{{ {walk}(e, version, path + "{name}[].", out); }} }}')
                    else:
                        body.append(f'if ({target}) {{ {walk}(*{target}, version, path + "{name}.", out); }}')
            elif f.is_struct:
                walk = f"nulls_{self.api.name}_{f.struct.name}"
                if f.is_array:
                    body.append(f'for (const auto& e : {target}) {{ {walk}(e, version, path + "{name}[].", out); }}')
                else:
                    body.append(f'{walk}({target}, version, path + "{name}.", out);')
            if not body:
                continue
            out.append(f"    if ({cond}) {{")
            out.extend("        " + b for b in body)
            out.append("    }")

    def emit(self, out):
        api = self.api
        mname = f"{api.name}_response"
        order = []
        struct_order(api.messages["response"].fields, set(), order)
        items = [(st.name, st.fields,
                  f"{mname}::{st.name}" if st.name not in api.shared else st.name) for st in order]
        items.append((mname, api.messages["response"].fields, mname))
        for sname, _, qual in items:
            out.append(f"[[maybe_unused]] void skeleton_{api.name}_{sname}({qual}& m, std::int16_t version);")
            out.append(f"void nulls_{api.name}_{sname}(const {qual}& m, std::int16_t version, "
                       "const std::string& path, std::vector<std::string>& out);")
        for sname, fields, qual in items:
            out.append(f"void skeleton_{api.name}_{sname}({qual}& m, std::int16_t version) {{")
            out.append("    (void)m; (void)version;")
            self.skeleton(fields, out)
            out.append("}")
            out.append(f"void nulls_{api.name}_{sname}(const {qual}& m, std::int16_t version, "
                       "const std::string& path, std::vector<std::string>& out) {")
            out.append("    (void)m; (void)version; (void)path; (void)out;")
            self.walk(fields, out)
            out.append("}")
        tname = kafka_name(api.name)
        out += ["", f"TEST(GeneratedResponseNulls, {tname}) {{",
                f"    for (std::int16_t v = {api.lo}; v <= {api.hi}; ++v) {{",
                "        SCOPED_TRACE(::testing::Message() << \"version \" << v);",
                f"        {mname} m;",
                f"        skeleton_{api.name}_{mname}(m, v);",
                "        writer w;",
                "        m.encode(w, v);",
                "        const byte_buffer bytes = w.flatten();",
                "        reader r(bytes.view());",
                f"        {mname} back;",
                "        back.decode(r, v);",
                "        ASSERT_TRUE(r.ok()) << r.error().message();",
                "        std::vector<std::string> nulls;",
                f"        nulls_{api.name}_{mname}(back, v, \"\", nulls);",
                "        EXPECT_TRUE(nulls.empty()) << ::testing::PrintToString(nulls);",
                "    }", "}", ""]


def emit_tests(apis, path):
    out = ["// Generated by protocol/codegen/generate.py: round trips for every API and version.",
           '#include <gtest/gtest.h>', "", "#include <sstream>", "#include <string>",
           "#include <vector>", "",
           '#include "protocol/kafka/all_messages.h"', "",
           "namespace sluice::protocol::kafka {", "namespace {", "",
           "template <typename M>",
           "void expect_round_trip(const M& m, std::int16_t version) {",
           "    writer w;",
           "    m.encode(w, version);",
           "    const byte_buffer first = w.flatten();",
           "    reader r(first.view());",
           "    M back;",
           "    back.decode(r, version);",
           "    ASSERT_TRUE(r.ok()) << r.error().message();",
           "    EXPECT_EQ(r.remaining(), 0u);",
           "    EXPECT_EQ(m, back);",
           "    writer w2;",
           "    back.encode(w2, version);",
           "    const byte_buffer second = w2.flatten();",
           "    ASSERT_EQ(first.size(), second.size());",
           "    EXPECT_TRUE(std::equal(first.view().begin(), first.view().end(), second.view().begin()));",
           "    std::ostringstream os;",
           "    os << m;",
           "    EXPECT_FALSE(os.str().empty());",
           "    // Every strict prefix must fail to decode, never crash.",
           "    for (std::size_t cut = 0; cut < first.size(); cut += 1 + first.size() / 64) {",
           "        reader pr(bytes_view(first.data(), cut));",
           "        M partial;",
           "        partial.decode(pr, version);",
           "        EXPECT_FALSE(pr.ok() && pr.remaining() == 0 && partial == m) << \"cut \" << cut;",
           "    }",
           "}", ""]
    for api in sorted(apis, key=lambda a: a.key):
        structs = resolve(api)
        se = SampleEmitter(api)
        # Forward declarations so that fill functions may call each other in any order.
        fills = []
        scopes = {}
        for kind in ("request", "response"):
            mname = f"{api.name}_{kind}"
            order = []
            struct_order(api.messages[kind].fields, set(api.shared), order)
            for s in order:
                scopes[s.name] = f"{mname}::{s.name}"
        for s in api.shared.values():
            scopes[s.name] = s.name
        seen = set()
        for sname, qual in scopes.items():
            s = structs[sname]
            out.append(f"void fill_{api.name}_{sname}({qual}& m, std::int16_t version, int seed);")
        for sname, qual in scopes.items():
            s = structs[sname]
            body = [f"void fill_{api.name}_{sname}({qual}& m, std::int16_t version, int seed) {{",
                    "    (void)version; (void)seed;"]
            se.fill_fields(s.fields, body, 0)
            body.append("}")
            fills.extend(body)
        out.extend(fills)
        for kind in ("request", "response"):
            mname = f"{api.name}_{kind}"
            body = [f"void fill_{mname}({mname}& m, std::int16_t version, int seed) {{",
                    "    (void)version; (void)seed;"]
            se.fill_fields(api.messages[kind].fields, body, 0)
            body.append("}")
            out.extend(body)
        tname = kafka_name(api.name)
        out += ["", f"TEST(GeneratedRoundTrip, {tname}) {{",
                f"    for (std::int16_t v = {api.lo}; v <= {api.hi}; ++v) {{",
                "        SCOPED_TRACE(::testing::Message() << \"version \" << v);",
                f"        {api.name}_request empty_req;",
                "        expect_round_trip(empty_req, v);",
                f"        {api.name}_request req;",
                f"        fill_{api.name}_request(req, v, 1);",
                "        expect_round_trip(req, v);",
                f"        {api.name}_response empty_resp;",
                "        expect_round_trip(empty_resp, v);",
                f"        {api.name}_response resp;",
                f"        fill_{api.name}_response(resp, v, 2);",
                "        expect_round_trip(resp, v);",
                "    }", "}", ""]
        NullAuditEmitter(api).emit(out)
    out += ["}  // namespace", "}  // namespace sluice::protocol::kafka", ""]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_if_changed(path, "\n".join(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tests")
    ap.add_argument("--list-apis", action="store_true", help="print api names and exit")
    ap.add_argument("schemas", nargs="+")
    args = ap.parse_args()
    try:
        apis = [parse_file(p) for p in sorted(args.schemas)]
        keys = {}
        for a in apis:
            if a.key in keys:
                raise SchemaError(f"{a.path}: key {a.key} already used by {keys[a.key]}")
            keys[a.key] = a.path
        if args.list_apis:
            for a in apis:
                print(a.name)
            return
        for a in apis:
            emit_api(a, args.out)
        emit_table(apis, args.out)
        if args.tests:
            emit_tests(apis, args.tests)
    except SchemaError as e:
        sys.exit(f"schema error: {e}")


if __name__ == "__main__":
    main()
