/* memo_data.c — data/safety_memo.csv, the self-attention article's worked
 * example, embedded in the library so that `kgl demo` works from any
 * directory. Byte for byte the data file: the test
 * memo_embedded_matches_data_file compares them, so an edit to one without
 * the other fails `make test`. */
#include "kgl/studies.h"

const char kgl_safety_memo_csv[] =
    "document_id,target_token,candidate_token,candidate_role,evidence_pack,evidence_cap,evidence_action,score\n"
    "memo_cap_missing,그것,배터리팩,equipment,0.9,0.1,0.0,0.2\n"
    "memo_cap_missing,그것,분리,prior_action,0.8,0.2,0.4,0.7\n"
    "memo_cap_missing,그것,절연캡,missing_object,0.1,0.95,0.2,2.4\n"
    "memo_cap_missing,그것,씌우지,missing_action,0.0,0.7,0.9,1.7\n"
    "memo_cap_missing,그것,그것,current_token,0.3,0.3,0.3,0.8\n"
    "memo_cap_missing,그것,위험,risk_question,0.2,0.6,0.7,1.3\n"
    "memo_cap_missing,씌우지,배터리팩,equipment,0.9,0.1,0.0,0.4\n"
    "memo_cap_missing,씌우지,분리,prior_action,0.8,0.2,0.4,1.7\n"
    "memo_cap_missing,씌우지,절연캡,missing_object,0.1,0.95,0.2,2.1\n"
    "memo_cap_missing,씌우지,씌우지,current_action,0.0,0.7,0.9,1.4\n"
    "memo_cap_missing,씌우지,그것,other_reference,0.3,0.3,0.3,0.2\n"
    "memo_cap_missing,씌우지,위험,risk_question,0.2,0.6,0.7,0.6\n";
const size_t kgl_safety_memo_csv_len = sizeof kgl_safety_memo_csv - 1;
