module "a" {
  source  = "./a"
  version = "1.0.0"
}
