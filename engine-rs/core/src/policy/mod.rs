//! The HD Proxy's policy: Rego (package `hd.authz`) compiled and evaluated by regorus, and the
//! record field mask the policy's hidden fields turn into (docs/proxy.md).
//!
//! A policy answers, for an input `{role, email, dataset, fields, query}`, the JSON object of its
//! package: `allow` (default true), `hidden_fields` (names the identity may not see) and
//! `constraints` (`{field, value, mask?}` filters every branch of the query must hold). The Proxy
//! turns that into a rewrite; this module only compiles and evaluates.

mod mask;

pub use mask::{apply_field_mask, MaskError};

use std::num::NonZeroU32;
use std::time::Duration;

use regorus::utils::limits::ExecutionTimerConfig;
use regorus::{Engine, Value};

/// The package every HD policy declares.
pub const POLICY_PACKAGE: &str = "data.hd.authz";

/// Longest time one evaluation may run before it is stopped (a runaway policy must not stall queries).
pub const EVAL_TIME_LIMIT: Duration = Duration::from_millis(250);

/// A policy that does not compile or an evaluation that failed; the message is regorus's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// What went wrong, with the policy line where the compiler names one.
    pub message: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}

/// Deepest nesting of `(`, `[` and `{` a policy may have. regorus's parser backtracks
/// exponentially on nested brackets (the `rego_policy` fuzz target found a 104-byte policy with 40
/// nested `[` that did not finish compiling in hours, on the thread that compiles it), so deeper
/// text is refused before it is parsed; at 16 the worst case found parses in well under 0.1 s, and
/// real policies nest a few levels.
pub const MAX_POLICY_NESTING: usize = 16;

/// Deepest bracket nesting of `rego`, outside strings and comments.
fn nesting(rego: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut chars = rego.chars();
    while let Some(c) = chars.next() {
        match c {
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '`' => {
                for c in chars.by_ref() {
                    if c == '`' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn err(e: impl std::fmt::Display) -> PolicyError {
    PolicyError {
        message: e.to_string(),
    }
}

/// A compiled policy. Evaluation clones the engine (cheap: its modules are shared), so one
/// compiled policy serves concurrent evaluations and is never mutated after compilation.
#[derive(Clone)]
pub struct Policy {
    engine: Engine,
}

impl Policy {
    /// Parses and checks `rego` (one module, package `hd.authz`) with optional `data` JSON, and runs
    /// one evaluation on an empty input so errors the parser cannot see surface now, not at the
    /// first query.
    pub fn compile(rego: &str, data_json: Option<&str>) -> Result<Policy, PolicyError> {
        let depth = nesting(rego);
        if depth > MAX_POLICY_NESTING {
            return Err(PolicyError {
                message: format!(
                    "the policy nests brackets {depth} deep; at most {MAX_POLICY_NESTING} are allowed"
                ),
            });
        }
        let mut engine = Engine::new();
        engine.set_rego_v0(false);
        let package = engine
            .add_policy("policy.rego".to_string(), rego.to_string())
            .map_err(err)?;
        if package != POLICY_PACKAGE {
            return Err(PolicyError {
                message: format!(
                    "the policy's package is {package:?}; HD policies declare `package hd.authz`"
                ),
            });
        }
        if let Some(d) = data_json {
            let v = Value::from_json_str(d).map_err(err)?;
            if v.as_object().is_err() {
                return Err(PolicyError {
                    message: "policy data must be a JSON object".to_string(),
                });
            }
            engine.add_data(v).map_err(err)?;
        }
        if let Some(check_interval) = NonZeroU32::new(64) {
            engine.set_execution_timer_config(ExecutionTimerConfig {
                limit: EVAL_TIME_LIMIT,
                check_interval,
            });
        }
        let policy = Policy { engine };
        policy.evaluate("{}")?;
        Ok(policy)
    }

    /// Evaluates the package for `input_json` and returns its value as JSON (an object; `{}` when
    /// no rule is defined for the input).
    pub fn evaluate(&self, input_json: &str) -> Result<String, PolicyError> {
        let mut engine = self.engine.clone();
        engine.set_input_json(input_json).map_err(err)?;
        let results = engine
            .eval_query(POLICY_PACKAGE.to_string(), false)
            .map_err(err)?;
        let value = results
            .result
            .first()
            .and_then(|r| r.expressions.first())
            .map(|e| e.value.clone())
            .unwrap_or_else(Value::new_object);
        value.to_json_str().map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
package hd.authz
import rego.v1

default allow := true

hidden_fields contains "src_ip" if input.role != "admin"

constraints contains {"field": "tenant", "value": input.email} if input.role == "analyst"
"#;

    #[test]
    fn evaluates_the_package_per_input() {
        let p = Policy::compile(POLICY, None).expect("compiles");
        let analyst: serde_json::Value = serde_json::from_str(
            &p.evaluate(r#"{"role":"analyst","email":"a@x"}"#)
                .expect("evaluates"),
        )
        .expect("json");
        assert_eq!(analyst["allow"], serde_json::json!(true));
        assert_eq!(analyst["hidden_fields"], serde_json::json!(["src_ip"]));
        assert_eq!(
            analyst["constraints"],
            serde_json::json!([{"field": "tenant", "value": "a@x"}])
        );
        let admin: serde_json::Value =
            serde_json::from_str(&p.evaluate(r#"{"role":"admin"}"#).expect("evaluates"))
                .expect("json");
        assert_eq!(admin["hidden_fields"], serde_json::json!([]));
    }

    #[test]
    fn refuses_what_does_not_compile_with_the_compilers_message() {
        let e = Policy::compile("package hd.authz\nallow := \n", None)
            .err()
            .expect("refused");
        assert!(!e.message.is_empty());
        let e = Policy::compile("package other\nallow := true\n", None)
            .err()
            .expect("refused");
        assert!(e.message.contains("package hd.authz"), "{}", e.message);
        let e = Policy::compile("package hd.authz\nallow := true\n", Some("[1]"))
            .err()
            .expect("refused");
        assert!(e.message.contains("JSON object"), "{}", e.message);
    }

    #[test]
    fn data_is_visible_to_the_policy() {
        let p = Policy::compile(
            "package hd.authz\nimport rego.v1\nhidden_fields contains f if { some f in data.hidden[input.role] }\n",
            Some(r#"{"hidden":{"guest":["a","b"]}}"#),
        )
        .expect("compiles");
        let v: serde_json::Value =
            serde_json::from_str(&p.evaluate(r#"{"role":"guest"}"#).expect("evaluates"))
                .expect("json");
        assert_eq!(v["hidden_fields"], serde_json::json!(["a", "b"]));
    }

    #[test]
    fn a_runaway_policy_is_stopped() {
        let p = Policy::compile(
            "package hd.authz\nimport rego.v1\nspin if { count([[x, y] | some x in numbers.range(1, input.n); some y in numbers.range(1, input.n)]) > 0 }\n",
            None,
        )
        .expect("compiles");
        // 400 million pairs: only the execution timer ends this.
        let r = p.evaluate(r#"{"n": 20000}"#);
        assert!(r.is_err());
    }

    #[test]
    fn deeply_nested_brackets_are_refused_before_parsing() {
        // The rego_policy fuzz target's timeout (engine-rs/fuzz/seeds/rego_policy/crash-*).
        let rego = format!(
            "package hd.authz\nimpo1tden_fen{}fnd  iata.hidden[inpp\" if input\"\n",
            "[".repeat(39)
        );
        let t = std::time::Instant::now();
        let e = Policy::compile(&rego, None).err().expect("refused");
        assert!(e.message.contains("nests brackets"), "{}", e.message);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        // Brackets inside strings and comments do not count; 16 levels still compile.
        let ok = format!(
            "package hd.authz\nimport rego.v1\n# {}\nx := \"{}\"\ny := {}1{}\n",
            "[".repeat(40),
            "[".repeat(40),
            "[".repeat(16),
            "]".repeat(16)
        );
        Policy::compile(&ok, None).expect("compiles");
    }
}
