/* libFuzzer target of libba_client's JSON reader (Sources/CBAClient/json.c) and of what the
 * client makes of a frame: a PackInfo list (bac_pack_from_json on every element of
 * result.packs.packs). docs/fuzzing.md, "The C client's JSON reader", says how it runs. */
#include "../../Sources/CBAClient/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bac_json json;
    if (bac_json_parse(&json, (const char *)data, size) == 0) {
        int32_t packs = bac_json_member(&json, bac_json_member(&json, bac_json_member(&json, 0, "result"), "packs"), "packs");
        if (bac_json_type_of(&json, packs) == BAC_JSON_ARRAY) {
            for (int32_t item = json.values[packs].first; item >= 0; item = json.values[item].next)
                ba_client_pack_free(bac_pack_from_json(&json, item));
        }
        int64_t id;
        (void)bac_json_integer(&json, bac_json_member(&json, 0, "id"), &id);
        (void)bac_json_string(&json, bac_json_member(&json, 0, "type"));
    }
    bac_json_free(&json);
    return 0;
}
