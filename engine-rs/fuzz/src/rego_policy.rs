//! Fuzzes the Proxy's policy engine (Rego via regorus, `hd_engine_core::policy`) with outside
//! text. First input byte: even, the rest is a policy (a DMS administrator's `PUT /v1/policy`)
//! compiled and, when it compiles, evaluated on a fixed input; odd, the rest is an evaluation
//! input (the identity and query the Proxy passes, built from request headers and bodies)
//! evaluated by a fixed policy that reads every field. Beyond "never panics": results are JSON
//! objects, and an evaluation of the same input gives the same answer twice.

use hd_engine_core::policy::Policy;

const POLICY: &str = r#"package hd.authz
import rego.v1
default allow := false
allow if { input.role == "admin" }
allow if { input.role == "analyst"; startswith(input.email, "a") ; count(input.fields) < 5 }
hidden_fields contains f if { input.role != "admin"; some f in ["src_ip", "dst_ip"] }
constraints contains {"field": "dataset", "value": input.dataset} if { input.role == "guest" }
constraints contains {"field": q.field, "value": sprintf("%v", [q.value])} if { some q in input.query.sub_queries[_].filters }
"#;

const INPUT: &str =
    r#"{"role":"guest","email":"g@example.com","dataset":"flows","fields":["ts"],"query":{}}"#;

fn is_object(json: &str) -> bool {
    json.trim_start().starts_with('{')
}

/// The target: never panics on any input, and holds the properties above.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if mode & 1 == 0 {
        if let Ok(p) = Policy::compile(text, None) {
            if let Ok(out) = p.evaluate(INPUT) {
                assert!(is_object(&out), "{out}");
            }
        }
    } else {
        let p = Policy::compile(POLICY, None).expect("the fuzz policy compiles");
        let first = p.evaluate(text);
        if let Ok(out) = &first {
            assert!(is_object(out), "{out}");
        }
        assert_eq!(first, p.evaluate(text), "deterministic");
    }
}
