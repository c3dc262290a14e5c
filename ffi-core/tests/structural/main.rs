//! Structural operations over values and object graphs: equality and hashing (with the path of
//! the first difference), the recursive comparisons, deep copy, repr printing, JSON graphs and
//! traversals (walks and maps).

mod compare;
mod copy;
mod equal;
mod json;
mod repr;
mod traverse;
mod types;
