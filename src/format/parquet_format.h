/*
 * Apache Parquet: the one definition of the files `simpletrace export
 * --format=parquet` writes (encoder: src/export/parquet_enc.c; what goes in
 * them: src/export/parquet.c). Learnt from the format's own specification
 * (apache/parquet-format: parquet.thrift, Encodings.md) and Thrift's
 * compact protocol; the values below are those of that schema. Depends on
 * nothing but <stdint.h>.
 *
 * A file, byte by byte:
 *
 *   "PAR1"                          4 bytes, the magic
 *   row group 0:
 *     column chunk 0:  [dictionary page] data page [data page]
 *     column chunk 1:  ...          one chunk per column, in schema order
 *                                   (a second data page: the PLAIN values of
 *                                   the rows a dictionary gave up on)
 *   row group 1 ...
 *   FileMetaData                    Thrift compact protocol (below)
 *   footer length                   4 bytes, little-endian: FileMetaData's size
 *   "PAR1"
 *
 * A page is a PageHeader (Thrift compact) followed by its body of
 * compressed_page_size bytes; the body is compressed as a whole with the
 * column chunk's codec (ours: ZSTD, one zstd frame per page).
 *
 *   dictionary page  body: the distinct values, PLAIN (for BYTE_ARRAY: a
 *                    4-byte little-endian length, then the bytes), written
 *                    first in its column chunk; index k is the k-th value
 *   data page (v1)   body, before compression:
 *                    - definition levels of an OPTIONAL column: a 4-byte
 *                      little-endian length, then that many bytes of the
 *                      RLE/bit-packed hybrid (below) with bit width 1
 *                      (1 = a value, 0 = NULL); a REQUIRED column has none;
 *                    - the values, NULLs left out:
 *                      PLAIN INT64       8 bytes little-endian each
 *                      DELTA_BINARY_PACKED  INT64 (below)
 *                      PLAIN BOOLEAN     1 bit each, least significant bit first
 *                      PLAIN BYTE_ARRAY  4-byte little-endian length + bytes
 *                      RLE_DICTIONARY    1 byte: the bit width of the indices,
 *                                        then the hybrid (no length before it)
 *
 * The RLE/bit-packed hybrid, for a fixed bit width w: runs back to back,
 *   an RLE run        varint(count << 1), then the value in ceil(w / 8)
 *                     bytes, little-endian: count times that value;
 *   a bit-packed run  varint(groups << 1 | 1), then groups * 8 values of w
 *                     bits each, packed from the least significant bit of
 *                     each byte up; the last run of a page may pad its last
 *                     group (readers stop at the page's value count).
 * varint is unsigned LEB128: 7 bits a byte, low groups first, bit 7 set on
 * all bytes but the last.
 *
 * DELTA_BINARY_PACKED, n >= 1 values (a page without values is PLAIN):
 *   header            varint(block size: 128), varint(miniblocks per
 *                     block: 4), varint(n), zigzag varint(the first value)
 *   blocks            of the n - 1 deltas (each value less the one before),
 *                     128 at a time (the last block may hold fewer):
 *                     zigzag varint(min: the smallest delta of the block),
 *                     4 bytes: the bit width of each miniblock (0..64),
 *                     then each miniblock's 32 values (delta - min), packed
 *                     at its width like the hybrid's bit-packed runs (the
 *                     last one padded with 0 to 32 values; a miniblock past
 *                     the last delta has width 0 and no bytes)
 *   Arithmetic wraps (two's complement): u64 max after 0 is the delta -1.
 *
 * Thrift compact protocol (how FileMetaData and PageHeader are written):
 *   struct     fields, then a 0 byte (stop); a field is a header then its value;
 *              header: one byte (id - previous id) << 4 | type when the
 *              difference is 1..15, else the type byte then zigzag varint id
 *   i32, i64   zigzag ((n << 1) ^ (n >> 63)), then varint; an enum is an i32
 *   binary     varint length, then the bytes (strings: UTF-8)
 *   bool       a field's value is its type: 1 true, 2 false (no byte)
 *   list       one byte size << 4 | element type when size < 15, else
 *              0xF0 | element type then varint size; then the elements
 *   union      a struct with one field set; an empty struct is one 0 byte
 *
 * The structures and fields we write (field id: type):
 *   FileMetaData    1 version i32 (1); 2 schema list<SchemaElement>; 3 num_rows i64;
 *                   4 row_groups list<RowGroup>; 5 key_value_metadata list<KeyValue>;
 *                   6 created_by string; 7 column_orders list<ColumnOrder>
 *   SchemaElement   1 type; 3 repetition_type; 4 name; 5 num_children i32;
 *                   6 converted_type; 10 logicalType LogicalType
 *                   (element 0 is the root: name and num_children only)
 *   LogicalType     union: 1 STRING {}; 8 TIMESTAMP TimestampType; 10 INTEGER IntType; 12 JSON {}
 *   TimestampType   1 isAdjustedToUTC bool; 2 unit TimeUnit (union: 3 NANOS {})
 *   IntType         1 bitWidth i8 (one byte); 2 isSigned bool
 *   KeyValue        1 key string; 2 value string
 *   ColumnOrder     union: 1 TYPE_ORDER {} (min/max compared as the logical type says)
 *   RowGroup        1 columns list<ColumnChunk>; 2 total_byte_size i64; 3 num_rows i64;
 *                   5 file_offset i64; 6 total_compressed_size i64; 7 ordinal i16
 *   ColumnChunk     2 file_offset i64 (0: no metadata outside the footer); 3 meta_data ColumnMetaData
 *   ColumnMetaData  1 type; 2 encodings list<Encoding>; 3 path_in_schema list<string>;
 *                   4 codec; 5 num_values i64; 6 total_uncompressed_size i64;
 *                   7 total_compressed_size i64 (both: pages with their headers);
 *                   9 data_page_offset i64; 11 dictionary_page_offset i64;
 *                   12 statistics Statistics
 *   Statistics      3 null_count i64; 5 max_value binary; 6 min_value binary
 *                   (PLAIN bytes of the value: 8 for an INT64)
 *   PageHeader      1 type PageType; 2 uncompressed_page_size i32; 3 compressed_page_size i32;
 *                   5 data_page_header DataPageHeader; 7 dictionary_page_header DictionaryPageHeader
 *   DataPageHeader  1 num_values i32 (NULLs included); 2 encoding; 3 definition_level_encoding;
 *                   4 repetition_level_encoding
 *   DictionaryPageHeader  1 num_values i32; 2 encoding (PLAIN)
 */
#ifndef ST_PARQUET_FORMAT_H
#define ST_PARQUET_FORMAT_H

#include <stdint.h>

#define ST_PQ_MAGIC "PAR1"
#define ST_PQ_MAGIC_BYTES 4u
#define ST_PQ_FILE_VERSION 1

/* Thrift compact protocol: field types, and element types of a list (the same numbers but bool). */
#define ST_TC_STOP 0u
#define ST_TC_TRUE 1u
#define ST_TC_FALSE 2u
#define ST_TC_I8 3u
#define ST_TC_I16 4u
#define ST_TC_I32 5u
#define ST_TC_I64 6u
#define ST_TC_BINARY 8u
#define ST_TC_LIST 9u
#define ST_TC_STRUCT 12u

/* Type (physical) */
#define ST_PQ_BOOLEAN 0
#define ST_PQ_INT64 2
#define ST_PQ_BYTE_ARRAY 6

/* ConvertedType (the older annotation, written beside LogicalType for older readers) */
#define ST_PQ_CONVERTED_UTF8 0
#define ST_PQ_CONVERTED_UINT_64 14
#define ST_PQ_CONVERTED_INT_64 18
#define ST_PQ_CONVERTED_JSON 19

/* FieldRepetitionType */
#define ST_PQ_REQUIRED 0
#define ST_PQ_OPTIONAL 1

/* Encoding */
#define ST_PQ_ENC_PLAIN 0
#define ST_PQ_ENC_RLE 3
#define ST_PQ_ENC_DELTA_BINARY_PACKED 5 /* integers (above) */
#define ST_PQ_ENC_RLE_DICTIONARY 8

/* CompressionCodec */
#define ST_PQ_CODEC_ZSTD 6

/* PageType */
#define ST_PQ_PAGE_DATA 0
#define ST_PQ_PAGE_DICTIONARY 2

/* LogicalType union members */
#define ST_PQ_LOGICAL_STRING 1
#define ST_PQ_LOGICAL_TIMESTAMP 8
#define ST_PQ_LOGICAL_INTEGER 10
#define ST_PQ_LOGICAL_JSON 12
#define ST_PQ_TIME_UNIT_NANOS 3

/* Field ids: FileMetaData */
#define ST_PQ_FMD_VERSION 1
#define ST_PQ_FMD_SCHEMA 2
#define ST_PQ_FMD_NUM_ROWS 3
#define ST_PQ_FMD_ROW_GROUPS 4
#define ST_PQ_FMD_KEY_VALUE 5
#define ST_PQ_FMD_CREATED_BY 6
#define ST_PQ_FMD_COLUMN_ORDERS 7

/* SchemaElement */
#define ST_PQ_SE_TYPE 1
#define ST_PQ_SE_REPETITION 3
#define ST_PQ_SE_NAME 4
#define ST_PQ_SE_NUM_CHILDREN 5
#define ST_PQ_SE_CONVERTED 6
#define ST_PQ_SE_LOGICAL 10

/* TimestampType, IntType, KeyValue, ColumnOrder */
#define ST_PQ_TS_ADJUSTED_UTC 1
#define ST_PQ_TS_UNIT 2
#define ST_PQ_INT_BIT_WIDTH 1
#define ST_PQ_INT_SIGNED 2
#define ST_PQ_KV_KEY 1
#define ST_PQ_KV_VALUE 2
#define ST_PQ_ORDER_TYPE_ORDER 1

/* RowGroup */
#define ST_PQ_RG_COLUMNS 1
#define ST_PQ_RG_TOTAL_BYTE_SIZE 2
#define ST_PQ_RG_NUM_ROWS 3
#define ST_PQ_RG_FILE_OFFSET 5
#define ST_PQ_RG_TOTAL_COMPRESSED 6
#define ST_PQ_RG_ORDINAL 7

/* ColumnChunk, ColumnMetaData */
#define ST_PQ_CC_FILE_OFFSET 2
#define ST_PQ_CC_META_DATA 3
#define ST_PQ_CMD_TYPE 1
#define ST_PQ_CMD_ENCODINGS 2
#define ST_PQ_CMD_PATH 3
#define ST_PQ_CMD_CODEC 4
#define ST_PQ_CMD_NUM_VALUES 5
#define ST_PQ_CMD_UNCOMPRESSED 6
#define ST_PQ_CMD_COMPRESSED 7
#define ST_PQ_CMD_DATA_PAGE_OFFSET 9
#define ST_PQ_CMD_DICT_PAGE_OFFSET 11
#define ST_PQ_CMD_STATISTICS 12

/* Statistics */
#define ST_PQ_STAT_NULL_COUNT 3
#define ST_PQ_STAT_MAX_VALUE 5
#define ST_PQ_STAT_MIN_VALUE 6

/* PageHeader, DataPageHeader, DictionaryPageHeader */
#define ST_PQ_PH_TYPE 1
#define ST_PQ_PH_UNCOMPRESSED 2
#define ST_PQ_PH_COMPRESSED 3
#define ST_PQ_PH_DATA 5
#define ST_PQ_PH_DICTIONARY 7
#define ST_PQ_DPH_NUM_VALUES 1
#define ST_PQ_DPH_ENCODING 2
#define ST_PQ_DPH_DEF_ENCODING 3
#define ST_PQ_DPH_REP_ENCODING 4
#define ST_PQ_DICT_NUM_VALUES 1
#define ST_PQ_DICT_ENCODING 2

#endif /* ST_PARQUET_FORMAT_H */
