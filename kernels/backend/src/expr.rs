//! Integer expressions for tuning files: `block * vec <= 2048`, `cols > 1024 && rows % 2 == 0`.
//!
//! Used by `gen` constraints (`where`, over the generated parameters) and by `when` conditions
//! (over the problem size the kernel passes and the config's own parameters). Data, not code: no
//! function calls, no assignment; values are i64, comparisons and logic give 0 or 1.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Num(i64),
    Var(String),
    Not(Box<Node>),
    Neg(Box<Node>),
    Bin(BinOp, Box<Node>, Box<Node>),
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A parsed expression, with its source text for messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    root: Node,
    text: String,
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    const OPS: [&str; 17] = [
        "&&", "||", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "and", "or",
        "not",
    ];
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
            let digits: String = s[start..i].chars().filter(|&c| c != '_').collect();
            let n = digits
                .parse::<i64>()
                .map_err(|_| format!("number `{}` does not fit in i64", &s[start..i]))?;
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &s[start..i];
            match word {
                "and" => out.push(Tok::Op("&&")),
                "or" => out.push(Tok::Op("||")),
                "not" => out.push(Tok::Op("!")),
                "true" => out.push(Tok::Num(1)),
                "false" => out.push(Tok::Num(0)),
                _ => out.push(Tok::Ident(word.to_owned())),
            }
        } else if c == '(' {
            out.push(Tok::LParen);
            i += 1;
        } else if c == ')' {
            out.push(Tok::RParen);
            i += 1;
        } else if let Some(op) = OPS[..14].iter().find(|op| s[i..].starts_with(**op)) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            return Err(format!("unexpected character `{c}` at offset {i}"));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

const LEVELS: [&[(&str, BinOp)]; 5] = [
    &[("||", BinOp::Or)],
    &[("&&", BinOp::And)],
    &[
        ("==", BinOp::Eq),
        ("!=", BinOp::Ne),
        ("<=", BinOp::Le),
        (">=", BinOp::Ge),
        ("<", BinOp::Lt),
        (">", BinOp::Gt),
    ],
    &[("+", BinOp::Add), ("-", BinOp::Sub)],
    &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
];

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn binary(&mut self, level: usize) -> Result<Node, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(op) = self
            .peek_op()
            .and_then(|o| LEVELS[level].iter().find(|(s, _)| *s == o))
            .map(|(_, op)| *op)
        {
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Node, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Op("!")) => {
                self.pos += 1;
                Ok(Node::Not(Box::new(self.unary()?)))
            }
            Some(Tok::Op("-")) => {
                self.pos += 1;
                Ok(Node::Neg(Box::new(self.unary()?)))
            }
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(Node::Num(n))
            }
            Some(Tok::Ident(v)) => {
                self.pos += 1;
                Ok(Node::Var(v))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let inner = self.binary(0)?;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(t) => Err(format!("unexpected {t:?}")),
            None => Err("unexpected end of expression".into()),
        }
    }
}

impl Expr {
    /// Parses `text` (integers, variables, `+ - * / %`, comparisons, `&&`, `||`, `!`,
    /// parentheses); the error names the text.
    pub fn parse(text: &str) -> Result<Expr, String> {
        let mut p = Parser {
            toks: lex(text).map_err(|e| format!("in `{text}`: {e}"))?,
            pos: 0,
        };
        let root = p.binary(0).map_err(|e| format!("in `{text}`: {e}"))?;
        if p.pos != p.toks.len() {
            return Err(format!(
                "in `{text}`: unexpected {:?} after the expression",
                p.toks[p.pos]
            ));
        }
        Ok(Expr {
            root,
            text: text.to_owned(),
        })
    }

    /// Evaluates with `lookup` giving variables; an unknown variable or a division by zero is an
    /// error naming the expression.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
        eval(&self.root, lookup).map_err(|e| format!("in `{}`: {e}", self.text))
    }

    /// Whether the expression reads variable `name`.
    pub fn uses(&self, name: &str) -> bool {
        fn walk(n: &Node, name: &str) -> bool {
            match n {
                Node::Num(_) => false,
                Node::Var(v) => v == name,
                Node::Not(a) | Node::Neg(a) => walk(a, name),
                Node::Bin(_, a, b) => walk(a, name) || walk(b, name),
            }
        }
        walk(&self.root, name)
    }

    /// Whether the expression is non-zero with `lookup` giving variables.
    pub fn holds(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<bool, String> {
        self.eval(lookup).map(|v| v != 0)
    }
}

fn eval(n: &Node, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
    Ok(match n {
        Node::Num(v) => *v,
        Node::Var(name) => lookup(name).ok_or_else(|| format!("unknown variable `{name}`"))?,
        Node::Not(x) => (eval(x, lookup)? == 0) as i64,
        Node::Neg(x) => eval(x, lookup)?.wrapping_neg(),
        Node::Bin(op, a, b) => {
            let a = eval(a, lookup)?;
            // Short-circuit, so `n > 0 && 1024 / n > 2` is safe.
            match op {
                BinOp::And if a == 0 => return Ok(0),
                BinOp::Or if a != 0 => return Ok(1),
                _ => {}
            }
            let b = eval(b, lookup)?;
            match op {
                BinOp::Or | BinOp::And => (b != 0) as i64,
                BinOp::Eq => (a == b) as i64,
                BinOp::Ne => (a != b) as i64,
                BinOp::Lt => (a < b) as i64,
                BinOp::Le => (a <= b) as i64,
                BinOp::Gt => (a > b) as i64,
                BinOp::Ge => (a >= b) as i64,
                BinOp::Add => a.wrapping_add(b),
                BinOp::Sub => a.wrapping_sub(b),
                BinOp::Mul => a.wrapping_mul(b),
                BinOp::Div | BinOp::Rem if b == 0 => return Err("division by zero".into()),
                BinOp::Div => a.wrapping_div(b),
                BinOp::Rem => a.wrapping_rem(b),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> Result<i64, String> {
        let vars = |n: &str| match n {
            "block" => Some(256),
            "vec" => Some(4),
            "zero" => Some(0),
            _ => None,
        };
        Expr::parse(s)?.eval(&vars)
    }

    #[test]
    fn precedence_and_logic() {
        assert_eq!(ev("1 + 2 * 3").unwrap(), 7);
        assert_eq!(ev("(1 + 2) * 3").unwrap(), 9);
        assert_eq!(ev("block * vec <= 1024").unwrap(), 1);
        assert_eq!(ev("block * vec < 1024").unwrap(), 0);
        assert_eq!(ev("block == 256 && vec != 4 || 1_000 % 7 == 6").unwrap(), 1);
        assert_eq!(ev("not (block > 100) or -vec == -4").unwrap(), 1);
        assert_eq!(ev("!0").unwrap(), 1);
        assert_eq!(ev("zero > 0 && 1 / zero").unwrap(), 0, "short circuit");
    }

    #[test]
    fn the_variables_an_expression_reads() {
        let e = Expr::parse("!(arith >= 16) || -numel % 2 == 0").unwrap();
        assert!(e.uses("arith") && e.uses("numel"));
        assert!(!e.uses("sms") && !e.uses("arit"));
        assert!(!Expr::parse("3 * 4").unwrap().uses("numel"));
    }

    #[test]
    fn errors_name_the_expression() {
        assert!(ev("1 / zero").unwrap_err().contains("division by zero"));
        assert!(ev("warps * 2")
            .unwrap_err()
            .contains("unknown variable `warps`"));
        assert!(ev("1 +").unwrap_err().contains("unexpected end"));
        assert!(ev("(1").unwrap_err().contains("missing `)`"));
        assert!(ev("1 $ 2")
            .unwrap_err()
            .contains("unexpected character `$`"));
        assert!(ev("1 2").unwrap_err().contains("after the expression"));
    }
}
