module "m" {
  version = "2.0.0"
}
