terraform {
  provider_meta "TEST" {}
}
