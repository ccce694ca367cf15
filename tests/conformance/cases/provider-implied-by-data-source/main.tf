data "null_data_source" "x" {}
