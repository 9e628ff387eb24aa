// JSON libraries on the HTTP front's hot paths (docs/benchmarks.md, "Choosing the JSON
// library"): reading a REST Proxy v2 produce body of 100 records of about 100 B, and writing a
// consumer answer of 100 records, with RapidJSON, simdjson (On Demand) and nlohmann-json.
//
// Each read benchmark does what the produce path needs: parse the body, walk "records", and get
// every key and value as bytes to put into a record batch (JSON format: the value's JSON text;
// binary format: the base64 string, decoded the same way for all libraries, so not measured).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <simdjson.h>

namespace {

constexpr int records_per_body = 100;

/// {"records":[{"key":"key-00000","value":{"id":0,"name":"...","tags":["a","b"],"ok":true}},...]}
/// with each value about 100 bytes of JSON.
std::string json_body() {
    std::string out = "{\"records\":[";
    for (int i = 0; i < records_per_body; ++i) {
        if (i) {
            out += ',';
        }
        char key[16];
        std::snprintf(key, sizeof key, "key-%05d", i);
        out += "{\"key\":\"" + std::string(key) + "\",\"value\":{\"id\":" + std::to_string(i) +
               ",\"name\":\"sensor reading from the north wing\",\"tags\":[\"a\",\"b\"],"
               "\"level\":3.25,\"ok\":true}}";
    }
    out += "]}";
    return out;
}

/// The binary form: base64 of 100-byte values.
std::string binary_body() {
    std::string out = "{\"records\":[";
    const std::string value(136, 'Q');  // 100 bytes -> 136 base64 characters
    for (int i = 0; i < records_per_body; ++i) {
        if (i) {
            out += ',';
        }
        out += "{\"key\":\"a2V5LTAwMDAw\",\"value\":\"" + value + "\"}";
    }
    out += "]}";
    return out;
}

// --- reading -----------------------------------------------------------------------------------

void BM_ReadJsonRapidJson(benchmark::State& state) {
    const std::string body = json_body();
    for (auto _ : state) {
        rapidjson::Document doc;
        doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
        std::size_t bytes = 0;
        rapidjson::StringBuffer sb;
        for (const auto& r : doc["records"].GetArray()) {
            bytes += r["key"].GetStringLength();
            sb.Clear();
            rapidjson::Writer<rapidjson::StringBuffer> w(sb);
            r["value"].Accept(w);
            bytes += sb.GetSize();
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * body.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_ReadJsonSimdjson(benchmark::State& state) {
    const simdjson::padded_string body(json_body());
    simdjson::ondemand::parser parser;
    for (auto _ : state) {
        auto doc = parser.iterate(body);
        std::size_t bytes = 0;
        for (auto r : doc["records"].get_array()) {
            auto obj = r.get_object();
            for (auto field : obj) {
                std::string_view k = field.unescaped_key();
                if (k == "key") {
                    bytes += std::string_view(field.value().get_string()).size();
                } else if (k == "value") {
                    // The value's JSON text as it is in the body: no re-serialization.
                    simdjson::ondemand::object value = field.value().get_object();
                    bytes += std::string_view(value.raw_json()).size();
                }
            }
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * body.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_ReadJsonNlohmann(benchmark::State& state) {
    const std::string body = json_body();
    for (auto _ : state) {
        auto doc = nlohmann::json::parse(body);
        std::size_t bytes = 0;
        for (const auto& r : doc["records"]) {
            bytes += r["key"].get_ref<const std::string&>().size();
            bytes += r["value"].dump().size();
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * body.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_ReadBinaryRapidJson(benchmark::State& state) {
    const std::string body = binary_body();
    for (auto _ : state) {
        rapidjson::Document doc;
        doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
        std::size_t bytes = 0;
        for (const auto& r : doc["records"].GetArray()) {
            bytes += r["key"].GetStringLength() + r["value"].GetStringLength();
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * body.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_ReadBinaryRapidJsonInsitu(benchmark::State& state) {
    const std::string original = binary_body();
    std::string body;
    for (auto _ : state) {
        body = original;  // in-situ parsing writes into the buffer
        rapidjson::Document doc;
        doc.ParseInsitu<rapidjson::kParseIterativeFlag>(body.data());
        std::size_t bytes = 0;
        for (const auto& r : doc["records"].GetArray()) {
            bytes += r["key"].GetStringLength() + r["value"].GetStringLength();
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * original.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_ReadBinarySimdjson(benchmark::State& state) {
    const simdjson::padded_string body(binary_body());
    simdjson::ondemand::parser parser;
    for (auto _ : state) {
        auto doc = parser.iterate(body);
        std::size_t bytes = 0;
        for (auto r : doc["records"].get_array()) {
            for (auto field : r.get_object()) {
                bytes += std::string_view(field.value().get_string()).size();
            }
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * body.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_ReadBinaryNlohmann(benchmark::State& state) {
    const std::string body = binary_body();
    for (auto _ : state) {
        auto doc = nlohmann::json::parse(body);
        std::size_t bytes = 0;
        for (const auto& r : doc["records"]) {
            bytes += r["key"].get_ref<const std::string&>().size() +
                     r["value"].get_ref<const std::string&>().size();
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(state.iterations() * body.size());
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

// --- writing: a consumer answer of 100 records {topic, key, value, partition, offset} ---------

const std::string value_text(100, 'v');

void BM_WriteRapidJson(benchmark::State& state) {
    rapidjson::StringBuffer sb;
    for (auto _ : state) {
        sb.Clear();
        rapidjson::Writer<rapidjson::StringBuffer> w(sb);
        w.StartArray();
        for (int i = 0; i < records_per_body; ++i) {
            w.StartObject();
            w.Key("topic");
            w.String("events");
            w.Key("key");
            w.String("key-00001");
            w.Key("value");
            w.String(value_text.data(), static_cast<rapidjson::SizeType>(value_text.size()));
            w.Key("partition");
            w.Int(0);
            w.Key("offset");
            w.Int64(1000000 + i);
            w.EndObject();
        }
        w.EndArray();
        benchmark::DoNotOptimize(sb.GetString());
    }
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

void BM_WriteNlohmann(benchmark::State& state) {
    for (auto _ : state) {
        nlohmann::json arr = nlohmann::json::array();
        for (int i = 0; i < records_per_body; ++i) {
            arr.push_back({{"topic", "events"},
                           {"key", "key-00001"},
                           {"value", value_text},
                           {"partition", 0},
                           {"offset", 1000000 + i}});
        }
        std::string out = arr.dump();
        benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(state.iterations() * records_per_body);
}

}  // namespace

BENCHMARK(BM_ReadJsonRapidJson);
BENCHMARK(BM_ReadJsonSimdjson);
BENCHMARK(BM_ReadJsonNlohmann);
BENCHMARK(BM_ReadBinaryRapidJson);
BENCHMARK(BM_ReadBinaryRapidJsonInsitu);
BENCHMARK(BM_ReadBinarySimdjson);
BENCHMARK(BM_ReadBinaryNlohmann);
BENCHMARK(BM_WriteRapidJson);
BENCHMARK(BM_WriteNlohmann);
BENCHMARK_MAIN();
