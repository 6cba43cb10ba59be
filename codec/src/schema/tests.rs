use super::*;

fn car() -> Schema {
    Schema::builder()
        .entity("car")
        .field("pos", Primitive::F32, 3)
        .field("lap", Primitive::U8, 1)
        .build()
        .unwrap()
}

#[test]
fn layout_and_offsets() {
    let s = car();
    let e = &s.sections()[0];
    assert_eq!(e.record_size(), 13);
    assert_eq!(e.offsets(), &[0, 12]);
    assert_eq!(e.element_layout().count(), 4);
}

#[test]
fn id_is_stable_and_sensitive() {
    let a = car();
    assert_eq!(a.id(), car().id());
    // Pinned: changing the hash is a wire-format change.
    assert_eq!(a.id(), 0x466a_c201, "{:#x}", a.id());
    let b = Schema::builder()
        .entity("car")
        .field("pos", Primitive::F32, 3)
        .field("lap", Primitive::I8, 1)
        .build()
        .unwrap();
    assert_ne!(a.id(), b.id());
    let c = Schema::builder()
        .entity("car")
        .field_with(Field {
            name: "pos".into(),
            ty: Primitive::F32,
            len: 3,
            delta: Some(DeltaOp::Xor),
        })
        .field("lap", Primitive::U8, 1)
        .build()
        .unwrap();
    assert_ne!(a.id(), c.id());
}

#[cfg(feature = "serde")]
#[test]
fn json_and_toml_agree_with_builder() {
    let j = Schema::from_json(
        r#"{"entities":[{"name":"car","fields":[{"name":"pos","type":"f32","len":3},{"name":"lap","type":"u8"}]}]}"#,
    )
    .unwrap();
    let t = Schema::from_toml(
        "[[entities]]\nname = \"car\"\nfields = [{ name = \"pos\", type = \"f32\", len = 3 }, { name = \"lap\", type = \"u8\" }]\n",
    )
    .unwrap();
    assert_eq!(j, car());
    assert_eq!(t, car());
    assert_eq!(Schema::from_json(&car().to_json()).unwrap(), car());
}

#[test]
fn rejects_bad_schemas() {
    assert_eq!(Schema::builder().build(), Err(SchemaError::NoSections));
    assert!(matches!(
        Schema::builder().entity("a").build(),
        Err(SchemaError::NoFields { .. })
    ));
    assert!(matches!(
        Schema::builder()
            .entity("a")
            .field("x", Primitive::U8, 1)
            .field("x", Primitive::U8, 1)
            .build(),
        Err(SchemaError::DuplicateName { .. })
    ));
    assert!(matches!(
        Schema::builder()
            .entity("a")
            .field("x", Primitive::U8, 0)
            .build(),
        Err(SchemaError::BadArrayLength { .. })
    ));
    assert!(matches!(
        Schema::builder()
            .entity("a")
            .field("x", Primitive::F64, 600)
            .build(),
        Err(SchemaError::RecordTooLarge { .. })
    ));
    assert!(matches!(
        Schema::from_json("{\"entities\": 3}"),
        Err(SchemaError::Parse { .. })
    ));
    assert!(matches!(
        Schema::from_json(r#"{"entities":[{"name":"a","fields":[{"name":"x","type":"u128"}]}]}"#),
        Err(SchemaError::Parse { .. })
    ));
}

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Car {
    pos: [f32; 3],
    id: u32,
}
crate::pod_layout!(Car {
    pos: [f32; 3],
    id: u32
});

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Swapped {
    id: u32,
    pos: [f32; 3],
}
crate::pod_layout!(Swapped {
    id: u32,
    pos: [f32; 3]
});

#[test]
fn pod_check() {
    let s = Schema::builder()
        .entity_from_pod::<Car>("car")
        .build()
        .unwrap();
    s.sections()[0].check_pod::<Car>().unwrap();
    assert!(matches!(
        s.sections()[0].check_pod::<Swapped>(),
        Err(SchemaError::PodMismatch { .. })
    ));
    let short = Schema::builder()
        .entity("car")
        .field("pos", Primitive::F32, 3)
        .build()
        .unwrap();
    assert!(matches!(
        short.sections()[0].check_pod::<Car>(),
        Err(SchemaError::PodMismatch { .. })
    ));
}

fn angles(step: f64) -> Result<Schema, SchemaError> {
    Schema::builder()
        .entity("player")
        .field("view", Primitive::F32, 3)
        .grid(step)
        .field("hp", Primitive::I32, 1)
        .build()
}

#[test]
fn grids_are_part_of_the_schema_id() {
    let plain = Schema::builder()
        .entity("player")
        .field("view", Primitive::F32, 3)
        .field("hp", Primitive::I32, 1)
        .build()
        .unwrap();
    let a = angles(360.0 / 65536.0).unwrap();
    let b = angles(0.5).unwrap();
    assert_ne!(a.id(), plain.id());
    assert_ne!(a.id(), b.id());
    assert_eq!(
        a.sections()[0].grids().collect::<Vec<_>>(),
        [Some(360.0 / 65536.0), None]
    );
}

#[test]
fn bad_grids_are_refused() {
    for step in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(angles(step), Err(SchemaError::BadGrid { .. })));
    }
    let on_int = Schema::builder()
        .entity("a")
        .field("hp", Primitive::I32, 1)
        .grid(1.0)
        .build();
    assert!(matches!(on_int, Err(SchemaError::BadGrid { .. })));
    let quantised = Schema::builder()
        .entity("a")
        .field("x", Primitive::F32, 1)
        .quantize(Quantize::step(0.01))
        .grid(0.01)
        .build();
    assert!(matches!(quantised, Err(SchemaError::BadGrid { .. })));
}

#[cfg(feature = "serde")]
#[test]
fn grids_survive_the_text_forms() {
    let a = angles(360.0 / 65536.0).unwrap();
    assert_eq!(Schema::from_json(&a.to_json()).unwrap(), a);
    let t = Schema::from_toml(
        "[[entities]]\nname = \"player\"\nfields = [{ name = \"view\", type = \"f32\", len = 3, grid = 0.0054931640625 }, { name = \"hp\", type = \"i32\" }]\n",
    )
    .unwrap();
    assert_eq!(t, a);
}

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Player {
    view: [f32; 3],
    hp: i32,
}
crate::pod_layout!(Player {
    view: [f32; 3] => crate::Grid(360.0 / 65536.0),
    hp: i32,
});

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct GridOnInt {
    hp: i32,
}
crate::pod_layout!(GridOnInt {
    hp: i32 => crate::Grid(1.0),
});

#[test]
fn pod_layouts_declare_grids() {
    let pod = Schema::builder()
        .entity_from_pod::<Player>("player")
        .build()
        .unwrap();
    assert_eq!(pod, angles(360.0 / 65536.0).unwrap());
    pod.sections()[0].check_pod::<Player>().unwrap();
    let bad = Schema::builder().entity_from_pod::<GridOnInt>("a").build();
    assert!(matches!(bad, Err(SchemaError::BadGrid { .. })));
}
