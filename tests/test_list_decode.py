"""Lists of numbers and strings (`list<int32>`, `large_list<list<float>>`,
...) are decoded by fastingest's own list decoder (`parquet/lists.rs`);
what it does not take (other layouts, other item types) goes to the
`parquet` crate. Either way the table must be pyarrow's: every depth, null or empty
list at every level, required and optional levels, item type, encoding,
page format and codec."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest

from .test_flat_decode import TYPES

ROWS = 3_000

# The flat decoder's types but decimals: the list decoder takes the same
# ones.
ITEMS = {name: kind for name, kind in TYPES.items() if not pa.types.is_decimal(kind)}


def list_type(item: pa.DataType, depth: int, nullable: bool, large: bool = False) -> pa.DataType:
    """`depth` lists around `item`; every level nullable or none; the
    outermost `large_list` when `large`."""
    kind = item
    for level in range(depth):
        make = pa.large_list if large and level == depth - 1 else pa.list_
        kind = make(pa.field("element", kind, nullable=nullable))
    return kind


def is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def leaf_values(item: pa.DataType, n: int, rng: np.random.Generator) -> list:
    """`n` Python values of `item`, extremes included."""
    if pa.types.is_boolean(item):
        return [bool(x) for x in rng.integers(0, 2, n)]
    if pa.types.is_floating(item):
        return [float(x) for x in rng.normal(size=n)]
    if item in (pa.string(), pa.binary(), pa.large_string(), pa.large_binary()):
        # Empty, multi-byte and longer than a 64-byte block.
        words = ["", "é", "日本", "🦀x", "y" * 70]
        text = [words[i % len(words)] + str(i) for i in rng.integers(0, 10**6, n)]
        if item in (pa.string(), pa.large_string()):
            return text
        return [t.encode() + b"\xff" for t in text]
    if item == pa.date32():
        days = pa.array(rng.integers(-50_000, 50_000, n), type=pa.int32())
        return days.cast(item).to_pylist()
    if pa.types.is_timestamp(item):
        # Whole microseconds: Python's datetime holds no nanoseconds.
        ticks = pa.array(rng.integers(-(10**9), 10**9, n) * 1000, type=pa.int64())
        return ticks.cast(item).to_pylist()
    dtype = item.to_pandas_dtype()
    info = np.iinfo(dtype)
    values = [int(x) for x in rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)]
    values[: min(2, n)] = [int(info.min), int(info.max)][: min(2, n)]
    return values


def nested(kind: pa.DataType, rng, null_share: float, empty_share: float, pool: list):
    """One random value of `kind`: at each list level, a null (where the
    level is nullable), an empty list, or up to 5 items."""
    if not is_list(kind):
        return pool[rng.integers(0, len(pool))]
    roll = rng.random()
    if roll < empty_share:
        return []
    field = kind.value_field
    out = []
    for _ in range(rng.integers(1, 6)):
        if field.nullable and rng.random() < null_share:
            out.append(None)
        else:
            out.append(nested(field.type, rng, null_share, empty_share, pool))
    return out


def column(kind, nullable, rng, null_share=0.15, empty_share=0.15, distinct=50):
    leaf = kind
    while is_list(leaf):
        leaf = leaf.value_type
    pool = leaf_values(leaf, distinct, rng)
    rows = []
    for _ in range(ROWS):
        if nullable and rng.random() < null_share:
            rows.append(None)
        else:
            rows.append(nested(kind, rng, null_share, empty_share, pool))
    return pa.array(rows, type=kind)


def write_and_compare(path, data: pa.Table, **write) -> None:
    pq.write_table(data, path, **write)
    ours = fastingest.read_parquet(str(path))
    theirs = pq.read_table(path)
    assert ours.schema == theirs.schema
    for name in theirs.column_names:
        assert ours[name].equals(theirs[name]), name


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("nullable", [True, False])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
def test_every_item_type_depth_and_null_pattern(
    tmp_path, depth, nullable, page_version, dictionary, large
):
    rng = np.random.default_rng(depth * 10 + nullable)
    fields, arrays = [], []
    for name, item in ITEMS.items():
        kind = list_type(item, depth, nullable, large)
        fields.append(pa.field(name, kind, nullable=nullable))
        arrays.append(column(kind, nullable, rng))
    write_and_compare(
        tmp_path / "t.parquet",
        pa.Table.from_arrays(arrays, schema=pa.schema(fields)),
        data_page_version=page_version,
        use_dictionary=dictionary,
        data_page_size=1024,  # lists spread over many pages
        row_group_size=1_100,  # row groups of unequal size
    )


def test_levels_mixed_nullable_and_required(tmp_path):
    # A required outer list of nullable inner lists of required items, and
    # the other way round.
    rng = np.random.default_rng(3)
    inner_a = pa.list_(pa.field("element", pa.int64(), nullable=False))
    a = pa.list_(pa.field("element", inner_a, nullable=True))
    inner_b = pa.list_(pa.field("element", pa.float32(), nullable=True))
    b = pa.list_(pa.field("element", inner_b, nullable=False))
    schema = pa.schema([pa.field("a", a, nullable=False), pa.field("b", b, nullable=True)])
    data = pa.Table.from_arrays([column(a, False, rng), column(b, True, rng)], schema=schema)
    write_and_compare(tmp_path / "t.parquet", data, data_page_size=2048)


@pytest.mark.parametrize("codec", ["none", "zstd", "gzip", "lz4"])
def test_codecs(tmp_path, codec):
    rng = np.random.default_rng(11)
    kind = list_type(pa.int32(), 2, True)
    data = pa.table({"x": column(kind, True, rng, distinct=10_000)})
    write_and_compare(tmp_path / "t.parquet", data, compression=codec)


def test_all_null_all_empty_and_long_lists(tmp_path):
    kind = list_type(pa.int64(), 1, True)
    data = pa.table(
        {
            "nulls": pa.array([None] * ROWS, type=kind),
            "empties": pa.array([[]] * ROWS, type=kind),
            "long": pa.array([list(range(i % 700)) for i in range(ROWS)], type=kind),
            "null_items": pa.array([[None] * (i % 4) for i in range(ROWS)], type=kind),
        }
    )
    write_and_compare(tmp_path / "t.parquet", data, row_group_size=1_000)


def test_lists_the_crate_decodes_stay_right(tmp_path):
    # Lists of structs holding a list go to the crate, between lists this
    # decoder takes (and a fixed-size list).
    rng = np.random.default_rng(8)
    ints = list_type(pa.int32(), 1, True)
    data = pa.table(
        {
            "large": pa.array([[i, i + 1] for i in range(ROWS)], type=pa.large_list(pa.int32())),
            "ints": column(ints, True, rng),
            "strs": pa.array([[str(i)] * (i % 3) for i in range(ROWS)]),
            "structs": pa.array([[{"a": i}] for i in range(ROWS)]),
            "deep": pa.array([[{"a": i, "l": [i] * (i % 3)}] for i in range(ROWS)]),
            "fixed": pa.array([[i, -i] for i in range(ROWS)], type=pa.list_(pa.int16(), 2)),
        }
    )
    write_and_compare(tmp_path / "t.parquet", data)


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("encoding", ["DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY"])
def test_delta_encoded_strings_in_lists_and_flat(tmp_path, page_version, encoding):
    # What Spark's and DuckDB's v2 writers pick for strings: decoded by
    # fastingest's string decoder, flat and as list items, with nulls at
    # both levels, empty values, shared prefixes and values across pages.
    rng = np.random.default_rng(21)
    words = np.array(["", "a", "tag-1", "tag-12", "tag-123", "héllo", "x" * 300])
    n = 20_000
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 5, n))]).astype(np.int32)
    items = pa.array(
        words[rng.integers(0, len(words), offsets[-1])], mask=rng.random(offsets[-1]) < 0.05
    )
    flat = pa.array(words[rng.integers(0, len(words), n)], mask=rng.random(n) < 0.1)
    data = pa.table(
        {
            "flat": flat,
            "sorted": pa.array(np.sort(np.array([f"id-{i:06d}" for i in rng.integers(0, n, n)]))),
            "bin": flat.cast(pa.binary()),
            "list": pa.ListArray.from_arrays(
                pa.array(offsets), items, mask=pa.array(rng.random(n) < 0.1)
            ),
            "large": pa.LargeListArray.from_arrays(
                pa.array(offsets.astype(np.int64)), items.cast(pa.large_string())
            ),
        }
    )
    path = tmp_path / "delta.parquet"
    write_and_compare(
        path,
        data,
        use_dictionary=False,
        column_encoding=encoding,
        data_page_version=page_version,
        data_page_size=8_000,
        row_group_size=7_000,
    )
    kept = fastingest.read_parquet(str(path), filters=[("sorted", "<", "id-005000")])
    assert kept.equals(pq.read_table(path, filters=[("sorted", "<", "id-005000")]))


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("encoding", ["plain", "dictionary", "byte_stream_split"])
def test_fixed_size_lists(tmp_path, page_version, encoding):
    # Embeddings as pyarrow writes them: `fixed_size_list<float>[n]`, its
    # items plain, dictionary-encoded or byte streams; null lists (Parquet
    # writes no items for them, Arrow wants n slots), null items, lists of
    # fixed-size lists, fixed-size lists of strings and inside structs.
    rng = np.random.default_rng(11)
    rows, width = ROWS, 16
    items = pa.array(rng.normal(size=rows * width).astype(np.float32))
    dense = pa.FixedSizeListArray.from_arrays(items, width)
    null_rows = pa.array(rng.random(rows) < 0.1)
    with_nulls = pa.FixedSizeListArray.from_arrays(items, width, mask=null_rows)
    null_items = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.normal(size=rows * 3), mask=rng.random(rows * 3) < 0.2), 3
    )
    words = pa.array([f"w{i % 97}é" for i in range(rows * 2)])
    lists_of = [[[i, -i], [i, 0]] if i % 5 else None for i in range(rows)]
    data = pa.table(
        {
            "id": pa.array(range(rows)),
            "emb": dense,
            "emb_nulls": with_nulls,
            "null_items": null_items,
            "strs": pa.FixedSizeListArray.from_arrays(words, 2),
            "lists_of": pa.array(lists_of, pa.list_(pa.list_(pa.int64(), 2))),
            "st": pa.StructArray.from_arrays([dense, pa.array(range(rows))], ["e", "id"]),
        }
    )
    floats = ["emb.list.element", "emb_nulls.list.element", "st.e.list.element"]
    path = tmp_path / "t.parquet"
    write_and_compare(
        path,
        data,
        data_page_version=page_version,
        use_dictionary=encoding == "dictionary",
        use_byte_stream_split=floats if encoding == "byte_stream_split" else False,
        data_page_size=2048,
        row_group_size=1_100,
    )
    ours = fastingest.read_parquet(
        str(path), columns=["emb_nulls", "strs"], filters=[("id", "<", 500)]
    )
    theirs = pq.read_table(path, columns=["emb_nulls", "strs"], filters=[("id", "<", 500)])
    assert ours.equals(theirs)
    # A null list's slots read as nulls, whatever pyarrow put there.
    got = fastingest.read_parquet(str(path), columns=["emb_nulls"])["emb_nulls"].combine_chunks()
    under_nulls = got.values.filter(
        pa.array(np.repeat(null_rows.to_numpy(zero_copy_only=False), width))
    )
    assert under_nulls.null_count in (0, len(under_nulls))


def test_projection_filters_and_batches(tmp_path):
    rng = np.random.default_rng(9)
    kind = list_type(pa.float64(), 2, True)
    data = pa.table({"k": pa.array(np.arange(ROWS) % 7), "v": column(kind, True, rng)})
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, row_group_size=700)
    assert fastingest.read_parquet(str(path), columns=["v"]).equals(
        pq.read_table(path, columns=["v"])
    )
    filtered = fastingest.read_parquet(str(path), filters=[("k", "==", 3)])
    assert filtered.equals(pq.read_table(path, filters=[("k", "==", 3)]))
    batches = list(fastingest.iter_batches(str(path)))
    assert pa.Table.from_batches(batches).equals(pq.read_table(path))


@pytest.mark.parametrize("dictionary", [True, False])
def test_invalid_utf8_in_lists_is_an_error_naming_the_file(tmp_path, dictionary):
    # "é" split over two values and a lone continuation byte, in lists: the
    # list decoder refuses them and the crate says what is wrong.
    raw = [b"ok", b"a\xc3", b"\xa9b", b"\x80"] * 50
    offsets = np.cumsum([0] + [len(v) for v in raw], dtype=np.int32)
    strings = pa.Array.from_buffers(
        pa.string(),
        len(raw),
        [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(raw))],
    )
    lists = pa.ListArray.from_arrays(
        pa.array(np.arange(0, len(raw) + 1, 4, dtype=np.int32)), strings
    )
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"l": lists}), path, use_dictionary=dictionary)
    with pytest.raises(fastingest.FastIngestError, match="bad.parquet") as raised:
        fastingest.read_parquet(str(path))
    assert "utf" in str(raised.value).lower()


def struct_items(rng, fields: list[pa.Field], struct_nullable: bool, null_share: float, n: int):
    """`n` structs of `fields` (values from each type's pool; a field's null
    where it may be one, the struct's where it may)."""
    pools = [leaf_values(f.type, 40, rng) for f in fields]
    out = []
    for _ in range(n):
        if struct_nullable and rng.random() < null_share:
            out.append(None)
            continue
        row = {}
        for f, pool in zip(fields, pools, strict=True):
            null = f.nullable and rng.random() < null_share
            row[f.name] = None if null else pool[rng.integers(0, len(pool))]
        out.append(row)
    return out


def write_and_check_reads(path, data: pa.Table, kept, *, dictionary, page_version, row_group_size):
    """`data` written to `path` in small pages, then read whole (pyarrow's
    table and `data` itself), with filter `kept` (pyarrow's) and streamed."""
    write_and_compare(
        path,
        data,
        use_dictionary=dictionary,
        data_page_version=page_version,
        data_page_size=2048,
        row_group_size=row_group_size,
    )
    assert fastingest.read_parquet(str(path)).equals(data)
    assert fastingest.read_parquet(str(path), filters=kept).equals(
        pq.read_table(path, filters=kept)
    )
    batches = list(fastingest.iter_batches(str(path)))
    assert pa.Table.from_batches(batches).equals(data)


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
def test_lists_of_structs(tmp_path, page_version, dictionary, large):
    # Lists of structs of flat fields (`parquet/lists.rs`, `struct_items`):
    # every item type as a field, nulls and empties at every level, fields
    # that may not be null, a struct that may not be, two list levels.
    rng = np.random.default_rng(12 + int(large) + 2 * int(dictionary))
    fields = [pa.field(name, kind) for name, kind in ITEMS.items()]
    fields.append(pa.field("required", pa.int32(), nullable=False))
    item = pa.struct(fields)

    rows = 800  # built from Python values: kept small

    def lists(kind, struct_nullable, depth):
        out = []
        for _ in range(rows):
            roll = rng.random()
            if roll < 0.1:
                out.append(None)
            elif roll < 0.2:
                out.append([])
            elif depth == 1:
                n = int(rng.integers(1, 5))
                out.append(struct_items(rng, fields, struct_nullable, 0.15, n))
            else:
                out.append([struct_items(rng, fields, struct_nullable, 0.15, 2) for _ in range(2)])
        return pa.array(out, type=kind)

    make = pa.large_list if large else pa.list_
    data = pa.table(
        {
            "id": pa.array(np.arange(rows)),
            "items": lists(make(pa.field("element", item)), True, 1),
            "never_null": lists(make(pa.field("element", item, nullable=False)), False, 1),
            "deeper": lists(pa.list_(make(pa.field("element", item))), True, 2),
        }
    )
    path = tmp_path / "t.parquet"
    kept = [("id", ">=", 150), ("id", "<", 620)]
    write_and_check_reads(
        path, data, kept, dictionary=dictionary, page_version=page_version, row_group_size=300
    )
    assert fastingest.read_parquet(str(path), columns=["items"]).equals(
        pq.read_table(path, columns=["items"])
    )


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_structs_holding_lists(tmp_path, page_version, dictionary):
    # Structs whose fields are lists of numbers or strings, lists of
    # structs or maps (`parquet/structs.rs` with `lists.rs`): a list first
    # (the struct's validity then comes from its levels) or after a flat
    # field, lists of lists, a list that may not be null, a struct within a
    # struct.
    rng = np.random.default_rng(31 + int(dictionary))

    def mask(share):
        return pa.array(rng.random(ROWS) < share)

    ints = column(list_type(pa.int32(), 1, True), True, rng)
    words = column(list_type(pa.string(), 2, True), True, rng)
    floats = column(list_type(pa.float64(), 1, False), False, rng)
    n = pa.array(np.where(rng.random(ROWS) < 0.1, None, np.arange(ROWS)), type=pa.int64())
    list_first = pa.StructArray.from_arrays(
        [ints, n, words],
        fields=[pa.field("l", ints.type), pa.field("n", n.type), pa.field("w", words.type)],
        mask=mask(0.15),
    )
    flat_first = pa.StructArray.from_arrays([n, ints], ["n", "l"], mask=mask(0.15))
    required_list = pa.StructArray.from_arrays(
        [floats], fields=[pa.field("f", floats.type, nullable=False)], mask=mask(0.2)
    )
    inner = pa.StructArray.from_arrays([words, n], ["w", "n"], mask=mask(0.1))
    deep = pa.StructArray.from_arrays([inner], ["inner"], mask=mask(0.1))
    # Lists of structs and maps as fields (the struct's validity from the
    # first's levels).
    item = pa.struct([("k", pa.string()), ("v", pa.list_(pa.int64()))])
    keys = leaf_values(pa.string(), 20, rng)

    def maybe(make, share=0.1):
        return None if rng.random() < share else make()

    def entry():
        return {"k": keys[rng.integers(0, 20)], "v": maybe(lambda: [1, 2][: rng.integers(0, 3)])}

    listed = pa.array(
        [maybe(lambda: [maybe(entry) for _ in range(rng.integers(0, 4))]) for _ in range(ROWS)],
        pa.list_(item),
    )
    mapped = pa.array(
        [maybe(lambda: [(k, 1) for k in keys[: rng.integers(0, 4)]]) for _ in range(ROWS)],
        pa.map_(pa.string(), pa.int64()),
    )
    nested = pa.StructArray.from_arrays([listed, mapped, n], ["items", "m", "n"], mask=mask(0.15))
    data = pa.table(
        {
            "id": pa.array(np.arange(ROWS)),
            "list_first": list_first,
            "flat_first": flat_first,
            "required_list": required_list,
            "deep": deep,
            "nested": nested,
        }
    )
    path = tmp_path / "t.parquet"
    kept = [("id", ">=", 700), ("id", "<", 2_400)]
    write_and_check_reads(
        path, data, kept, dictionary=dictionary, page_version=page_version, row_group_size=1_100
    )
    # Only some of a struct's fields (`parquet/projected.rs`).
    some = ["list_first.w", "deep"]
    assert fastingest.read_parquet(str(path), columns=some).equals(
        pq.read_table(path, columns=some)
    )


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_maps(tmp_path, page_version, dictionary):
    # Maps (`parquet/lists.rs`: a list of key-value structs): null and empty
    # maps, null values, values that are lists, maps within lists.
    rng = np.random.default_rng(41 + int(dictionary))
    keys = leaf_values(pa.string(), 30, rng)
    ints = leaf_values(pa.int64(), 30, rng)

    def entries(n, value):
        return [(keys[rng.integers(0, len(keys))], value()) for _ in range(n)]

    def maybe(make, share=0.1):
        return None if rng.random() < share else make()

    def int_value():
        return maybe(lambda: ints[rng.integers(0, len(ints))])

    def list_value():
        return maybe(lambda: [float(x) for x in rng.normal(size=rng.integers(0, 4))])

    n = 1_500
    strings = [maybe(lambda: entries(rng.integers(0, 5), int_value)) for _ in range(n)]
    listed = [maybe(lambda: entries(rng.integers(0, 4), list_value)) for _ in range(n)]
    in_lists = [
        maybe(lambda: [maybe(lambda: entries(2, int_value)) for _ in range(rng.integers(0, 3))])
        for _ in range(n)
    ]
    string_map = pa.map_(pa.string(), pa.int64())
    data = pa.table(
        {
            "id": pa.array(np.arange(n)),
            "strings": pa.array(strings, type=string_map),
            "listed": pa.array(listed, type=pa.map_(pa.string(), pa.list_(pa.float64()))),
            "in_lists": pa.array(in_lists, type=pa.list_(string_map)),
        }
    )
    kept = [("id", ">=", 200), ("id", "<", 1_100)]
    write_and_check_reads(
        tmp_path / "t.parquet",
        data,
        kept,
        dictionary=dictionary,
        page_version=page_version,
        row_group_size=600,
    )


def nested_items(rng: np.random.Generator, n: int) -> pa.Array:
    """`n` structs {id: int64 required, p: {x: float64, y: {s: string, n:
    int64 required}}, w: list<int32>}, nulls at every level (the required
    fields inside nullable structs)."""

    def maybe(make, share=0.12):
        return None if rng.random() < share else make()

    words = leaf_values(pa.string(), 40, rng)

    def y():
        return {"s": maybe(lambda: words[rng.integers(0, 40)]), "n": int(rng.integers(0, 99))}

    def item(i):
        return {
            "id": i,
            "p": maybe(lambda: {"x": maybe(lambda: float(rng.normal())), "y": maybe(y)}),
            "w": maybe(lambda: [int(v) for v in rng.integers(0, 9, rng.integers(0, 3))]),
        }

    y_type = pa.struct([("s", pa.string()), pa.field("n", pa.int64(), nullable=False)])
    kind = pa.struct(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("p", pa.struct([("x", pa.float64()), ("y", y_type)])),
            ("w", pa.list_(pa.int32())),
        ]
    )
    return pa.array([maybe(lambda i=i: item(i)) for i in range(n)], type=kind)


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_lists_of_structs_holding_structs(tmp_path, page_version, dictionary):
    # Lists whose items are structs holding structs (`lists.rs`,
    # `ItemNode::Struct`), as a column and as a struct's field, with nulls
    # and empties at every level.
    rng = np.random.default_rng(53 + int(dictionary))
    items = nested_items(rng, 5_000)
    lengths = rng.integers(0, 4, ROWS)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    null_lists = pa.array(rng.random(ROWS) < 0.1)
    lists = pa.ListArray.from_arrays(
        pa.array(offsets), items.slice(0, int(offsets[-1])), mask=null_lists
    )
    around = pa.StructArray.from_arrays(
        [pa.array(np.arange(ROWS)), lists], ["n", "l"], mask=pa.array(rng.random(ROWS) < 0.1)
    )
    data = pa.table({"id": pa.array(np.arange(ROWS)), "lists": lists, "around": around})
    kept = [("id", ">=", 500), ("id", "<", 2_000)]
    write_and_check_reads(
        tmp_path / "t.parquet",
        data,
        kept,
        dictionary=dictionary,
        page_version=page_version,
        row_group_size=1_300,
    )


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_struct_fields_read_in_part(tmp_path, page_version, dictionary):
    # Dotted paths into a struct (`parquet/projected.rs`): the struct cut to
    # the fields asked for, at any depth, beside lists, maps and lists of
    # structs read whole, filtered and streamed: pyarrow's answer.
    rng = np.random.default_rng(67 + int(dictionary))

    def mask(share):
        return pa.array(rng.random(ROWS) < share)

    n = pa.array(np.where(rng.random(ROWS) < 0.1, None, np.arange(ROWS)), type=pa.int64())
    ints = column(list_type(pa.int32(), 1, True), True, rng)
    words = pa.array(leaf_values(pa.string(), ROWS, rng))
    mapped = pa.array(
        [None if i % 9 == 4 else [("k", i), ("j", -i)][: i % 3] for i in range(ROWS)],
        pa.map_(pa.string(), pa.int64()),
    )
    listed = pa.ListArray.from_arrays(
        pa.array(np.arange(0, 2 * ROWS + 1, 2, dtype=np.int32)), nested_items(rng, 2 * ROWS)
    )
    inner = pa.StructArray.from_arrays([words, n], ["w", "n"], mask=mask(0.1))
    s = pa.StructArray.from_arrays(
        [n, words, inner, ints, mapped, listed],
        ["a", "b", "inner", "ints", "m", "items"],
        mask=mask(0.1),
    )
    data = pa.table({"id": pa.array(np.arange(ROWS)), "s": s})
    path = tmp_path / "t.parquet"
    write_and_compare(
        path,
        data,
        use_dictionary=dictionary,
        data_page_version=page_version,
        data_page_size=2048,
        row_group_size=1_100,
    )
    kept = [("id", ">=", 300), ("id", "<", 2_500)]
    for columns in [
        ["s.a"],
        ["s.b", "id"],
        ["s.inner.n"],
        ["s.inner.w", "s.a"],
        ["s.ints"],
        ["s.m", "s.b"],
        ["s.items", "s.inner"],
        ["s.inner.n", "s.items", "s.ints", "id"],
    ]:
        expected = pq.read_table(path, columns=columns)
        assert fastingest.read_parquet(str(path), columns=columns).equals(expected), columns
        filtered = fastingest.read_parquet(str(path), columns=columns, filters=kept)
        assert filtered.equals(pq.read_table(path, columns=columns, filters=kept)), columns
        batches = list(fastingest.iter_batches(str(path), columns=columns))
        assert pa.Table.from_batches(batches).equals(expected), columns
