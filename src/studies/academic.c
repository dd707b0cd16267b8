/* academic.c — the academic world (data/academic.tsv and
 * data/academic.types.tsv) embedded in the library, so that `kgl train` works
 * from any directory. Byte for byte the data files: the test
 * academic_embedded_matches_data_files reads both and compares, so an edit to
 * one without the other fails `make test`. */
#include "kgl/studies.h"

const char kgl_academic_tsv[] =
    "# The academic world: a toy knowledge graph for kgl.\n"
    "# 13 entities: professors alice, bob; students carol, dave, erin;\n"
    "#   papers p1, p2, p3; institutions cmu, mit; topics logic, ml, nesy.\n"
    "# 5 relations: advises, authored, cites, affiliated, about; 21 triples.\n"
    "# Format: head<TAB>relation<TAB>tail, one triple per line (README: \"File formats\").\n"
    "# Entity types are in academic.types.tsv. src/studies/academic.c embeds this file\n"
    "# byte for byte (a test checks it).\n"
    "alice\tadvises\tdave\n"
    "alice\tadvises\terin\n"
    "bob\tadvises\tcarol\n"
    "alice\tauthored\tp2\n"
    "alice\tauthored\tp3\n"
    "bob\tauthored\tp1\n"
    "carol\tauthored\tp1\n"
    "dave\tauthored\tp2\n"
    "erin\tauthored\tp3\n"
    "p2\tcites\tp1\n"
    "p3\tcites\tp1\n"
    "p3\tcites\tp2\n"
    "alice\taffiliated\tmit\n"
    "bob\taffiliated\tcmu\n"
    "carol\taffiliated\tcmu\n"
    "dave\taffiliated\tmit\n"
    "erin\taffiliated\tmit\n"
    "p1\tabout\tlogic\n"
    "p2\tabout\tml\n"
    "p3\tabout\tnesy\n"
    "p3\tabout\tml\n";
const size_t kgl_academic_tsv_len = sizeof kgl_academic_tsv - 1;

const char kgl_academic_types_tsv[] =
    "# Entity types of the academic world (academic.tsv): entity<TAB>type.\n"
    "# 13 entities, 5 types: Professor, Student, Paper, Institution, Topic.\n"
    "# src/studies/academic.c embeds this file byte for byte (a test checks it).\n"
    "alice\tProfessor\n"
    "bob\tProfessor\n"
    "carol\tStudent\n"
    "dave\tStudent\n"
    "erin\tStudent\n"
    "p1\tPaper\n"
    "p2\tPaper\n"
    "p3\tPaper\n"
    "cmu\tInstitution\n"
    "mit\tInstitution\n"
    "logic\tTopic\n"
    "ml\tTopic\n"
    "nesy\tTopic\n";
const size_t kgl_academic_types_tsv_len = sizeof kgl_academic_types_tsv - 1;
